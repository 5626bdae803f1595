#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# shellcheck shell=bats
# Hostile and broken lock paths: directories, FIFOs, symlinks, files that
# are not lock files, corrupt headers, read-only files seen by another
# user, and a header lock held by a stopped process. lockbox must refuse
# or cope, never hang, and never change a file that is not its own.

load test_helper

# refused MESSAGE PATH: slots (a command), check, list and mutex all refuse
# PATH with 125 and "APPLET: PATH: MESSAGE", without blocking.
refused() {
	local msg=$1 path=$2
	run -125 --separate-stderr within 10 "$LOCKBOX" slots "$path" 2 touch "$T/ran"
	assert_stderr "slots: $path: $msg"
	run -125 --separate-stderr within 10 "$LOCKBOX" slots -w 5 "$path" 2 touch "$T/ran"
	assert_stderr "slots: $path: $msg"
	run -125 --separate-stderr within 10 "$LOCKBOX" slots "$path" check
	assert_stderr "slots: $path: $msg"
	assert_output ""
	run -125 --separate-stderr within 10 "$LOCKBOX" slots --json "$path" list
	assert_stderr "slots: $path: $msg"
	assert_output ""
	run -125 --separate-stderr within 10 "$LOCKBOX" mutex "$path" touch "$T/ran"
	assert_stderr "mutex: $path: $msg"
	assert [ ! -e "$T/ran" ]
}

# magic_file NAME FILL: the 16-byte magic, then 4080 bytes of FILL (zero,
# ff or text) to make up the header.
magic_file() {
	{
		printf 'lockbox lock v1\n'
		case $2 in
		zero) head -c 4080 /dev/zero ;;
		ff) head -c 4080 /dev/zero | tr '\0' '\377' ;;
		text) yes 'this is not a header, just text.' | head -c 4080 ;;
		esac
	} >"$1"
	assert_equal "$(stat -c %s "$1")" 4096
}

# locked_unwritten MESSAGE PATH: slots (a pool of 2) refuses PATH with 125
# and "slots: PATH: MESSAGE", without blocking; check and list read it
# (nobody holds it); mutex (a pool of one) locks it as flock(1) does and
# runs its command. The caller checks that nothing was written.
locked_unwritten() {
	local msg=$1 path=$2
	run -125 --separate-stderr within 10 "$LOCKBOX" slots "$path" 2 touch "$T/ran"
	assert_stderr "slots: $path: $msg"
	run -125 --separate-stderr within 10 "$LOCKBOX" slots -w 5 "$path" 2 touch "$T/ran"
	assert_stderr "slots: $path: $msg"
	assert [ ! -e "$T/ran" ]
	run -0 --separate-stderr within 10 "$LOCKBOX" slots "$path" check
	assert_output 0
	run -0 --separate-stderr within 10 "$LOCKBOX" slots --json "$path" list
	assert_output "[]"
	run -0 --separate-stderr within 10 "$LOCKBOX" mutex "$path" touch "$T/ran"
	assert_stderr ""
	assert [ -e "$T/ran" ]
	rm "$T/ran"
}

# bats test_tags=lockkind
@test "a directory is refused as a pool, locked as flock(1) locks it by mutex, and left alone" {
	mkdir "$T/dir"
	locked_unwritten "not a regular file" "$T/dir"
	run -0 ls -A "$T/dir"
	assert_output ""
}

@test "a FIFO is refused without hanging" {
	mkfifo "$T/fifo"
	refused "not a regular file" "$T/fifo"
	assert [ -p "$T/fifo" ]
}

@test "a device is refused" {
	[[ -c /dev/null ]] || skip "no /dev/null"
	refused "not a regular file" /dev/null
	assert [ -c /dev/null ]
}

@test "a dangling symlink is not followed: its target is never created" {
	ln -s "$T/target" "$T/link"
	refused "is a symbolic link; refusing to follow it" "$T/link"
	assert [ ! -e "$T/target" ]
	assert [ -L "$T/link" ]
}

# bats test_tags=lockkind
@test "a symlink to an existing file is not followed: the file is unchanged" {
	printf 'precious data\n' >"$T/target"
	ln -s "$T/target" "$T/link"
	local before
	before=$(sha "$T/target")
	refused "is a symbolic link; refusing to follow it" "$T/link"
	assert_equal "$(sha "$T/target")" "$before"
	# nor to an existing lock file
	run -0 "$LOCKBOX" slots "$F" 2 true
	before=$(sha "$F")
	ln -s "$F" "$T/link2"
	refused "is a symbolic link; refusing to follow it" "$T/link2"
	assert_equal "$(sha "$F")" "$before"
}

# bats test_tags=lockkind
@test "a file that is not a lock file is left byte-identical" {
	local name before
	printf 'line one\nline two\n' >"$T/text"
	head -c 6000 /dev/urandom >"$T/random"
	printf '\n' >"$T/newline"
	printf 'lockbox lock v1' >"$T/short-magic"
	{
		printf 'lockbox lock v2\n'
		head -c 4080 /dev/zero
	} >"$T/other-version"
	{
		printf 'lockbox lock v1\n'
		head -c 4080 /dev/zero
	} | tr 'l' 'L' >"$T/other-case"
	for name in text random newline short-magic other-version other-case; do
		before=$(sha "$T/$name")
		locked_unwritten "not a lockbox lock file; refusing to touch it (give the lock a path of its own: lockbox creates it)" "$T/$name"
		run -125 --separate-stderr "$LOCKBOX" mutex "$T/$name" create
		assert_stderr "mutex: $T/$name: not a lockbox lock file; refusing to touch it (give the lock a path of its own: lockbox creates it)"
		assert_equal "$(sha "$T/$name")" "$before"
	done
}

@test "a file of zero bytes (not empty) is not a lock file and stays so" {
	local size before
	for size in 1 16 4096 5000; do
		head -c "$size" /dev/zero >"$T/zeros"
		before=$(sha "$T/zeros")
		locked_unwritten "not a lockbox lock file; refusing to touch it (give the lock a path of its own: lockbox creates it)" "$T/zeros"
		assert_equal "$(sha "$T/zeros")" "$before"
		assert_equal "$(stat -c %s "$T/zeros")" "$size"
	done
}

# bats test_tags=lockkind
@test "an empty existing file is adopted" {
	: >"$F"
	run -0 --separate-stderr "$LOCKBOX" slots "$F" 2 sh -c "$SHOW_SLOT"
	assert_output 1
	run -0 head -c 16 "$F"
	assert_output "lockbox lock v1"
}

# bats test_tags=lockkind
@test "a new lock file is created 0600, for its owner only, whatever the umask" {
	run -0 sh -c 'umask 022 && exec "$@"' sh "$LOCKBOX" slots "$F" 1 true
	assert_equal "$(stat -c %a "$F")" 600
	run -0 sh -c 'umask 0 && exec "$@"' sh "$LOCKBOX" mutex "$T/open" true
	assert_equal "$(stat -c %a "$T/open")" 600
	run -0 sh -c 'umask 077 && exec "$@"' sh "$LOCKBOX" slots "$T/private" 1 true
	assert_equal "$(stat -c %a "$T/private")" 600
}

# bats test_tags=lockkind,wait
@test "a corrupt header (magic intact) still works and never hangs" {
	local fill lf
	for fill in zero ff text; do
		lf=$T/lock.$fill
		magic_file "$lf" "$fill"
		run -0 --separate-stderr within 10 "$LOCKBOX" slots "$lf" 3 sh -c "$SHOW_SLOT"
		assert_output 1
		run -0 --separate-stderr within 10 "$LOCKBOX" slots "$lf" check
		assert_output 0
		run -0 --separate-stderr within 10 "$LOCKBOX" slots "$lf" list
		assert_output "SLOT  PID      AGE     COMMAND"
		# and again with a holder in it, the header rewritten to garbage
		start_holder "$lf" 3
		magic_file "$T/fresh" "$fill"
		dd if="$T/fresh" of="$lf" bs=16 skip=1 seek=1 count=255 conv=notrunc status=none
		run -0 --separate-stderr within 10 "$LOCKBOX" slots "$lf" check
		assert_output 1
		run -0 --separate-stderr within 10 "$LOCKBOX" slots "$lf" list
		assert_regex "${lines[1]}" "^1 +$HOLDER_PID "
		run -0 --separate-stderr within 10 "$LOCKBOX" slots "$lf" 3 sh -c "$SHOW_SLOT"
		assert_output 2
		run -75 --separate-stderr within 10 "$LOCKBOX" slots "$lf" 1 true
		assert_stderr_regex "^slots: $(re_quote "$lf"): held by $(named_re "$HOLDER_PID" sh)\$"
		run -0 --separate-stderr within 10 "$LOCKBOX" slots -w 10 "$lf" 2 true
		stop_pid "$HOLDER_PID"
	done
}

# bats test_tags=lockkind
@test "garbage holder records are never trusted over the locks" {
	{
		printf 'lockbox lock v1\n'
		head -c 4080 /dev/zero
		head -c 2048 /dev/zero | tr '\0' '\377'
	} >"$F"
	run -0 --separate-stderr within 10 "$LOCKBOX" slots "$F" check
	assert_output 0
	run -0 --separate-stderr within 10 "$LOCKBOX" slots "$F" 2 sh -c "$SHOW_SLOT"
	assert_output 1
	# records copied from a live holder's file name a live PID, yet no
	# lock backs them
	start_holder "$T/real" 2
	cp "$T/real" "$T/copy"
	run -0 "$LOCKBOX" slots "$T/copy" check
	assert_output 0
	run -0 "$LOCKBOX" slots "$T/copy" list
	assert_output "SLOT  PID      AGE     COMMAND"
	run -0 --separate-stderr within 10 "$LOCKBOX" slots "$T/copy" 1 sh -c "$SHOW_SLOT"
	assert_output 1
}

# bats test_tags=lockkind
@test "a slot locked by a foreign program is held, by that program, named" {
	need_lockhold
	# a header and no records: the lock byte of slot 1 is locked with no
	# holder record behind it, which no lockbox holder ever is
	magic_file "$F" zero
	lockhold "$F" 4096 1
	run -0 "$LOCKBOX" slots "$F" check
	assert_output 1
	run -0 --separate-stderr "$LOCKBOX" slots "$F" list
	assert_equal "${#lines[@]}" 2
	assert_regex "${lines[1]}" "^1 +$LOCKHOLD_PID +\\? +another program: lockhold\$"
	run -0 "$LOCKBOX" slots "$F" 2 sh -c "$SHOW_SLOT"
	assert_output 2
	run -75 --separate-stderr "$LOCKBOX" slots "$F" 1 touch "$T/ran"
	assert_stderr_regex "$(locked_re slots "$F" "$LOCKHOLD_PID" lockhold)"
	assert [ ! -e "$T/ran" ]
	stop_pid "$LOCKHOLD_PID"
	run -0 "$LOCKBOX" slots "$F" 1 sh -c "$SHOW_SLOT"
	assert_output 1
}

# bats test_tags=lockkind,privilege
@test "check and list on a read-only file work for another user" {
	need_root_and_nobody
	local d before
	d=$(world_readable_dir)
	local lf=$d/lock
	start_holder "$lf" 2
	chmod 0444 "$lf"
	before=$(sha "$lf")
	run -0 --separate-stderr as_nobody "$LOCKBOX" slots "$lf" check
	assert_output 1
	assert_stderr ""
	run -0 --separate-stderr as_nobody "$LOCKBOX" slots "$lf" list
	assert_regex "${lines[1]}" "^$HOLDER_SLOT +$HOLDER_PID "
	run -0 --separate-stderr as_nobody "$LOCKBOX" mutex --json "$lf" check
	assert_output "{\"file\":\"$lf\",\"held\":1}"
	run -0 --separate-stderr as_nobody "$LOCKBOX" slots --json "$lf" list
	valid_json <<<"$output"
	# taking a slot needs write access: a clear refusal, no change
	run -125 --separate-stderr as_nobody "$LOCKBOX" slots "$lf" 2 true
	assert_stderr "slots: $lf: Permission denied: the file is UID 0's, mode 0444; a lock shared between users is created with --mode 0664 (a group) or 0666 (everyone), or chmod it"
	assert_equal "$(sha "$lf")" "$before"
	assert_equal "$(stat -c %u:%a "$lf")" 0:444
}

# bats test_tags=lockkind,privilege
@test "check and list of a missing file, as another user: 0, nothing, not created" {
	need_root_and_nobody
	local d
	d=$(world_readable_dir)
	run -0 --separate-stderr as_nobody "$LOCKBOX" slots "$d/missing" check
	assert_output 0
	assert_stderr ""
	run -0 --separate-stderr as_nobody "$LOCKBOX" slots "$d/missing" list
	assert_output "SLOT  PID      AGE     COMMAND"
	run -0 --separate-stderr as_nobody "$LOCKBOX" slots --json "$d/missing" list
	assert_output "[]"
	run -125 --separate-stderr as_nobody "$LOCKBOX" slots "$d/missing" 2 true
	assert_stderr "slots: $d/missing: Permission denied"
	assert [ ! -e "$d/missing" ]
	run -0 ls -A "$d"
	assert_output ""
}

# --- read access is enough to block a lock: foreign read locks -------------

# bats test_tags=lockkind
@test "a foreign read lock on the whole header refuses a run at once with 75, named; check and list show it" {
	need_lockhold
	start_holder "$F" 3
	# lockbox's lookers read-lock only the header's first 64 bytes: a read
	# lock on all of it is another program's
	lockhold -r "$F" 0 4096
	run -75 --separate-stderr at_once "$LOCKBOX" slots "$F" 3 touch "$T/ran"
	assert_stderr_regex "$(locked_re slots "$F" "$LOCKHOLD_PID" lockhold)"
	assert [ ! -e "$T/ran" ]
	run -75 --separate-stderr at_once "$LOCKBOX" mutex "$F" touch "$T/ran"
	assert_stderr_regex "$(locked_re mutex "$F" "$LOCKHOLD_PID" lockhold)"
	run -0 --separate-stderr at_once "$LOCKBOX" slots "$F" check
	assert_output 2
	run -0 --separate-stderr at_once "$LOCKBOX" slots "$F" list
	assert_equal "${#lines[@]}" 3
	assert_regex "${lines[1]}" "^$HOLDER_SLOT +$HOLDER_PID "
	assert_regex "${lines[2]}" "^- +$LOCKHOLD_PID +\\? +another program: lockhold\$"
	stop_pid "$LOCKHOLD_PID"
	run -0 --separate-stderr "$LOCKBOX" slots "$F" 3 sh -c "$SHOW_SLOT"
	assert_output 2
}

# bats test_tags=lockkind,privilege
@test "a user who may only read the lock file can block it: the run is refused at once, naming that user's process" {
	need_root_and_nobody
	local d lf
	d=$(world_readable_dir)
	lf=$d/lock
	run -0 "$LOCKBOX" slots --mode 0644 "$lf" 2 true
	# lockf(3)'s shared lock, from a read-only open, as the other user
	foreign_lockf -u sh "$lf"
	run -75 --separate-stderr at_once "$LOCKBOX" slots "$lf" 2 touch "$T/ran"
	assert_stderr "slots: $lf: locked by another program: PID $FOREIGN_PID (python3)"
	assert [ ! -e "$T/ran" ]
	run -0 --separate-stderr "$LOCKBOX" slots "$lf" check
	assert_output 1
	run -0 --separate-stderr "$LOCKBOX" slots "$lf" list
	assert_regex "${lines[1]}" "^- +$FOREIGN_PID +\\? +another program: python3\$"
	run -0 --separate-stderr "$LOCKBOX" slots --json "$lf" list
	assert_output "[{\"slot\":null,\"pid\":$FOREIGN_PID,\"foreign\":true,\"lock\":\"read\",\"start\":0,\"end\":null,\"command\":\"python3\"}]"
}

# bats test_tags=lockkind
@test "a foreign read lock on a slot's byte: that slot is its holder's, named, in check, list and refusals" {
	need_lockhold
	run -0 "$LOCKBOX" slots "$F" 2 true
	lockhold -r "$F" 4096 1
	run -0 --separate-stderr "$LOCKBOX" slots "$F" check
	assert_output 1
	run -0 --separate-stderr "$LOCKBOX" slots "$F" list
	assert_equal "${#lines[@]}" 2
	assert_regex "${lines[1]}" "^1 +$LOCKHOLD_PID +\\? +another program: lockhold\$"
	run -75 --separate-stderr at_once "$LOCKBOX" mutex "$F" touch "$T/ran"
	assert_stderr_regex "$(locked_re mutex "$F" "$LOCKHOLD_PID" lockhold)"
	assert [ ! -e "$T/ran" ]
	run -0 --separate-stderr "$LOCKBOX" slots "$F" 2 sh -c "$SHOW_SLOT"
	assert_output 2
}

# bats test_tags=lockkind
@test "a classic POSIX read lock on a slot's byte (lockf) is named the same way" {
	run -0 "$LOCKBOX" slots "$F" 2 true
	foreign_lockf sh "$F" 1 4096
	run -0 --separate-stderr "$LOCKBOX" slots "$F" check
	assert_output 1
	run -0 --separate-stderr "$LOCKBOX" slots "$F" list
	assert_regex "${lines[1]}" "^1 +$FOREIGN_PID +\\? +another program: python3\$"
	run -75 --separate-stderr at_once "$LOCKBOX" slots "$F" 1 touch "$T/ran"
	assert_stderr "slots: $F: locked by another program: PID $FOREIGN_PID (python3)"
}

# stuck_header: a lock file with one holder, whose header lock is then
# held by a process that is stopped.
stuck_header() {
	need_lockhold
	start_holder "$F" 2
	lockhold "$F" 0 4096
	kill -STOP "$LOCKHOLD_PID"
}

# bats test_tags=lockkind
@test "a header locked by a stopped process: a run takes the free slot without it, and a full pool is busy" {
	stuck_header
	local p t0 t1
	p=$(pace)
	t0=${EPOCHREALTIME/./}
	run -0 --separate-stderr within 30 "$LOCKBOX" slots "$F" 2 touch "$T/ran"
	t1=${EPOCHREALTIME/./}
	p=$(pace "$p")
	assert_output ""
	assert_stderr ""
	assert [ -e "$T/ran" ]
	# after the second of no progress (the header's wait), and a few process starts
	((t1 - t0 >= 1000000)) || fail "took the slot after $(((t1 - t0) / 1000))ms"
	((t1 - t0 <= 1000000 + 200 * p)) || fail "took $(((t1 - t0) / 1000))ms (pace $((p / 1000))ms)"
	# the slot was taken, and its record written, without the header
	run -0 --separate-stderr "$LOCKBOX" slots "$F" list
	assert_regex "${lines[1]}" "^$HOLDER_SLOT +$HOLDER_PID "
	# every slot held: busy, naming the holders, after the same wait (the tests' knob shortens it)
	spawn "$LOCKBOX" slots "$F" 2 sleep 600
	wait_for held_is "$F" 2
	run -75 --separate-stderr timeout 30 env LOCKBOX_TEST_HEADER_WAIT=200ms \
		"$LOCKBOX" slots "$F" 2 touch "$T/ran2"
	assert_stderr_regex "^slots: $(re_quote "$F"): all 2 slots busy: PID [0-9]+ \\([^)]*\\), PID [0-9]+ \\([^)]*\\)\$"
	assert [ ! -e "$T/ran2" ]
}

# bats test_tags=lockkind
@test "a header locked by a stopped process: check and list still answer" {
	stuck_header
	run -0 --separate-stderr within 10 "$LOCKBOX" slots "$F" check
	assert_output 1
	run -0 --separate-stderr within 10 "$LOCKBOX" slots "$F" list
	assert_regex "${lines[1]}" "^$HOLDER_SLOT +$HOLDER_PID "
}

# bats test_tags=lockkind,privilege,wait
@test "a header locked by a stopped process: a -w waiter takes the slot freed, without the header" {
	stuck_header
	spawn env LOCKBOX_TEST_HEADER_WAIT=200ms "$LOCKBOX" slots -w 60 "$F" 1 touch "$T/ran"
	local waiter=$SPAWN_PID
	# one slot of two is held: a pool of one is full, and the waiter is the head
	wait_for waiting_on "$F" 1
	assert [ ! -e "$T/ran" ]
	stop_pid "$HOLDER_PID"
	reap "$waiter"
	assert_equal "$REAP_STATUS" 0
	assert [ -e "$T/ran" ]
}

# --- the wait queue: foreign locks on its bytes, forged ticket counts ------

# shared_pool: $F becomes a lock file others may read (--mode 0644, in a
# directory they can enter), held by HOLDER_PID.
shared_pool() {
	need_root_and_nobody
	need_lockhold
	F=$(world_readable_dir)/lock
	run -0 "$LOCKBOX" mutex --mode 0644 "$F" true
	start_holder_with mutex "$F"
}

# bats test_tags=lockkind,privilege
@test "read locks on every slot's byte by a user who may only read: a run is refused at once, not after a wait for each" {
	need_root_and_nobody
	need_lockhold
	local pool
	pool=$(world_readable_dir)/lock
	run -0 "$LOCKBOX" slots --mode 0644 "$pool" 100 true
	# slots 1 to 100: one read lock each, the shape of a waiter's look
	lockhold_ro -n 100 "$pool" 4096 1
	local p u0
	p=$(pace)
	u0=${EPOCHREALTIME/[.,]/}
	run -75 --separate-stderr within 60 "$LOCKBOX" slots "$pool" 100 touch "$T/ran"
	# shellcheck disable=SC2154 # set by run --separate-stderr
	assert_regex "$stderr" "another program"
	assert [ ! -e "$T/ran" ]
	# one short bound for the whole attempt: it was 100 ms a slot (10 s
	# here) with the header locked, so other runs called it stuck
	within_paces "$u0" "$p" 1000
}

# bats test_tags=lockkind,wait
@test "a read lock on the queue's tickets by a user who may only read: -w gives 75 at once, naming it" {
	shared_pool
	lockhold_ro "$F" 4294967296 0
	local p u0 msg
	p=$(pace)
	u0=${EPOCHREALTIME/[.,]/}
	msg=$(queue_blocked_re read "$F" "$LOCKHOLD_PID" lockhold)
	run -75 --separate-stderr within 20 "$LOCKBOX" mutex -w 10 "$F" echo GOT
	assert_stderr_regex "^mutex: $(re_quote "$F"): $msg\$"
	assert_output ""
	run -75 --separate-stderr within 20 "$LOCKBOX" slots -w 10 "$F" 1 echo GOT
	assert_stderr_regex "^slots: $(re_quote "$F"): $msg\$"
	# -q silences it, -E picks the status
	run -3 --separate-stderr within 20 "$LOCKBOX" mutex -q -E 3 -w 10 "$F" echo GOT
	assert_stderr ""
	# the library's -w too (it needs open file description locks)
	if ofd_build; then
		# shellcheck disable=SC2016 # expanded by the child shell
		run -75 --separate-stderr timeout 20 bash -c '. "$("$LOCKBOX" --shell-lib)"; acquire_mutex -w 10 "$1"' sh "$F"
		assert_stderr_regex "$msg"
	fi
	# no spinning waiter kept the header: others are answered at once
	run -75 --separate-stderr within 20 "$LOCKBOX" mutex "$F" true
	assert_stderr_regex "^mutex: $(re_quote "$F"): held by PID $HOLDER_PID "
	# six runs, none waited out its -w 10
	within_paces "$u0" "$p" 500
	# a free lock is taken with -w too: nobody has to queue
	stop_pid "$HOLDER_PID"
	run -0 --separate-stderr within 20 "$LOCKBOX" mutex -w 10 "$F" echo GOT
	assert_output GOT
}

# bats test_tags=lockkind,wait
@test "a read lock on the tickets after the head's: the second waiter gives 75 at once; the head is served" {
	shared_pool
	# shellcheck disable=SC2016 # expanded by the child shell
	spawn "$LOCKBOX" mutex -w 30 "$F" sh -c 'echo HEAD >"$1"' sh "$T/head"
	local head=$SPAWN_PID p u0
	wait_for waiting_on "$F" 1
	lockhold_ro "$F" 4294967297 0
	p=$(pace)
	u0=${EPOCHREALTIME/[.,]/}
	run -75 --separate-stderr within 20 "$LOCKBOX" mutex -w 10 "$F" echo GOT
	assert_stderr_regex "^mutex: $(re_quote "$F"): $(queue_blocked_re read "$F" "$LOCKHOLD_PID" lockhold)\$"
	within_paces "$u0" "$p" 500
	stop_pid "$HOLDER_PID"
	reap "$head"
	assert_equal "$REAP_STATUS" 0
	assert_equal "$(cat "$T/head")" HEAD
}

# bats test_tags=lockkind,wait
@test "a read lock on the queue's join byte by a user who may only read: -w gives 75 at once, naming it" {
	shared_pool
	lockhold_ro "$F" 4294967295 1
	local p u0
	p=$(pace)
	u0=${EPOCHREALTIME/[.,]/}
	run -75 --separate-stderr within 20 "$LOCKBOX" mutex -w 10 "$F" echo GOT
	assert_stderr_regex "^mutex: $(re_quote "$F"): $(queue_blocked_re read "$F" "$LOCKHOLD_PID" lockhold)\$"
	# behind a head that queued before the lock came
	stop_pid "$LOCKHOLD_PID"
	spawn "$LOCKBOX" mutex -w 30 "$F" true
	local head=$SPAWN_PID
	wait_for waiting_on "$F" 1
	lockhold_ro "$F" 4294967295 1
	run -75 --separate-stderr within 20 "$LOCKBOX" mutex -w 10 "$F" echo GOT
	assert_stderr_regex "^mutex: $(re_quote "$F"): $(queue_blocked_re read "$F" "$LOCKHOLD_PID" lockhold)\$"
	within_paces "$u0" "$p" 1000
	stop_pid "$HOLDER_PID"
	reap "$head"
	assert_equal "$REAP_STATUS" 0
}

# bats test_tags=lockkind,wait
@test "a forged ticket count (2^63-1, 2^64-1) starts a fresh queue: waiters join and are served in order" {
	local v a b
	for v in 0x7fffffffffffffff 0xffffffffffffffff 0x1000000000000; do
		rm -f "$F" "$T/order"
		start_holder_with mutex "$F"
		poke "$F" 32 "$(le 8 "$v")"
		# shellcheck disable=SC2016 # expanded by the child shell
		spawn "$LOCKBOX" mutex -w 30 "$F" sh -c 'echo A >>"$1"' sh "$T/order"
		a=$SPAWN_PID
		wait_for waiting_on "$F" 1
		# shellcheck disable=SC2016 # expanded by the child shell
		spawn "$LOCKBOX" mutex -w 30 "$F" sh -c 'echo B >>"$1"' sh "$T/order"
		b=$SPAWN_PID
		wait_for waiting_on "$F" 2
		# tickets 0 and 1 taken: the count is 2
		assert_equal "$(od -An -tu8 -j32 -N8 "$F" | tr -d ' ')" 2
		stop_pid "$HOLDER_PID"
		reap "$a"
		assert_equal "$REAP_STATUS" 0
		reap "$b"
		assert_equal "$REAP_STATUS" 0
		assert_equal "$(paste -sd' ' "$T/order")" "A B"
	done
}

# --- what records say, printed safely --------------------------------------

# start_named_holder NAME: a holder of a slot of $F (MAX 2) whose command
# line has NAME as its $0, so the record's command holds NAME's bytes
start_named_holder() {
	HOLDERS=$((HOLDERS + 1))
	local marker=$T/holder.$HOLDERS
	spawn "$LOCKBOX" slots --record-args "$F" 2 sh -c "$HOLD_SCRIPT" "$1" "$marker"
	HOLDER_PID=$SPAWN_PID
	wait_for holder_ready "$marker" "$HOLDER_PID"
}

# bats test_tags=lockkind
@test "commands with bad UTF-8, a cut character, a newline or ESC: valid JSON, one line each, no ESC" {
	local e2
	# 'é' is two bytes: with one prefix byte or two, the record's cut
	# lands inside a character in one of the two
	printf -v e2 '%s' é{1..80}
	start_named_holder "x$e2"
	start_named_holder $'\xff\xfe bad\nline two \e[31mred'
	run -0 --separate-stderr "$LOCKBOX" slots --json "$F" list
	valid_json <<<"$output"
	run -0 --separate-stderr "$LOCKBOX" slots "$F" list
	# a header and two holders, valid UTF-8, and no escape reaches the terminal
	assert_equal "${#lines[@]}" 3
	iconv -f UTF-8 -t UTF-8 <<<"$output" >/dev/null
	run -1 grep -q $'\e' <<<"$output"
	run -75 --separate-stderr "$LOCKBOX" slots "$F" 2 true
	# shellcheck disable=SC2154 # set by run --separate-stderr
	assert_equal "$(printf '%s\n' "$stderr" | wc -l)" 1
	run -1 grep -q $'\e' <<<"$stderr"
	stop_pid "$HOLDER_PID"
	start_named_holder "xx$e2"
	run -0 --separate-stderr "$LOCKBOX" slots --json "$F" list
	valid_json <<<"$output"
}

# bats test_tags=lockkind
@test "a crafted start time in a record: no overflow, an age, statuses from the table" {
	start_holder "$F" 2
	# the record of slot 1 at 4096: wall and boot start times (bytes 16
	# and 24, little-endian) set to the most negative 64-bit number
	printf '\0\0\0\0\0\0\0\200\0\0\0\0\0\0\0\200' |
		dd of="$F" bs=1 seek=$((4096 + 16)) conv=notrunc status=none
	run -0 --separate-stderr "$LOCKBOX" slots "$F" list
	assert_equal "${#lines[@]}" 2
	run -0 --separate-stderr "$LOCKBOX" slots --json "$F" list
	valid_json <<<"$output"
	run -75 --separate-stderr "$LOCKBOX" slots "$F" 1 true
	assert_stderr_regex "^slots: $(re_quote "$F"): held by $(named_re "$HOLDER_PID" sh)\$"
	run -0 --separate-stderr "$LOCKBOX" slots "$F" 2 true
}

# --- item: a file of odd size is cut back to whole records ------------------
# A write cut short (a full disk, a file size limit) leaves a header plus a
# part of a record. Reading it as whole records overran the buffer (seen
# under ASan and valgrind); now it is cut back under the header lock.

# records_whole FILE: the file is a header plus whole records
records_whole() {
	local size
	size=$(stat -c %s "$1")
	((size >= 4096 && (size - 4096) % 256 == 0))
}

# bats test_tags=lockkind
@test "a lock file with a cut record: counted right, cut back to whole records, never overrun" {
	local cut
	for cut in 1 4 100 255; do
		rm -f "$F"
		start_holder "$F" 3
		# a second record begun and cut short, as a failed write leaves it
		head -c "$cut" /dev/urandom >>"$F"
		run -0 --separate-stderr "$LOCKBOX" slots "$F" check
		assert_output 1
		run -0 --separate-stderr "$LOCKBOX" slots --json "$F" list
		assert_regex "$output" "^\\[\\{\"slot\":1,\"pid\":$HOLDER_PID,"
		run -0 --separate-stderr "$LOCKBOX" slots "$F" 3 sh -c "$SHOW_SLOT"
		assert_output 2
		assert_stderr ""
		records_whole "$F"
		run -0 --separate-stderr "$LOCKBOX" slots "$F" check
		assert_output 1
		stop_pid "$HOLDER_PID"
	done
}

# --- item: zero-size pseudo-files are not lock files ------------------------
# A file of a kernel file system (proc, sysfs, cgroup, ...) looks empty, and
# writing a header into one changes the system. And an empty file that
# lockbox did not create gets a header only when nobody else could have put
# it there for root to write into.

# bats test_tags=lockkind,privilege,wait
@test "a zero-size file of /proc is refused and never written: the hostname stays" {
	((EUID == 0)) || skip "needs root for a UTS namespace of its own"
	command -v unshare >/dev/null || skip "needs unshare"
	unshare -u true 2>/dev/null || skip "cannot make a UTS namespace here"
	local msg="on a kernel file system (proc), not a lock file; refusing to touch it" fdmsg
	fdmsg=$msg
	ofd_build || fdmsg="--fd needs open file description locks, which this build lacks"
	# in a namespace of its own, so that a failure cannot rename the host
	# shellcheck disable=SC2016 # expanded by the inner bash
	run -0 --separate-stderr unshare -u bash -c '
		f=/proc/sys/kernel/hostname
		hostname lockbox-test || exit 9
		"$1" mutex "$f" true; printf "%s\n" "$?"
		"$1" slots -w 1 "$f" 2 true; printf "%s\n" "$?"
		"$1" mutex "$f" check; printf "%s\n" "$?"
		exec 7<>"$f"
		"$1" mutex acquire --fd 7; printf "%s\n" "$?"
		hostname' sh "$LOCKBOX"
	assert_equal "${lines[*]}" "125 125 125 125 lockbox-test"
	assert_stderr "mutex: /proc/sys/kernel/hostname: $msg
slots: /proc/sys/kernel/hostname: $msg
mutex: /proc/sys/kernel/hostname: $msg
mutex: /proc/sys/kernel/hostname: $fdmsg"
}

# bats test_tags=lockkind,wait
@test "a zero-size file of /sys is refused, also by check" {
	local f
	for f in /sys/kernel/mm/transparent_hugepage/enabled /sys/kernel/profiling \
		/sys/power/state; do
		[[ -f $f && ! -L $f ]] && break
		f=
	done
	[[ -n $f ]] || skip "no sysfs file to try"
	run -125 --separate-stderr "$LOCKBOX" slots "$f" check
	assert_stderr "slots: $f: on a kernel file system (sysfs), not a lock file; refusing to touch it"
	assert_output ""
}

# not_adopted MESSAGE FILE: every applet form that would write a header
# refuses the empty FILE with 125 and "APPLET: FILE: MESSAGE", and it
# stays empty; mutex running a command locks it as flock(1) does, without
# a header
not_adopted() {
	local msg=$1 f=$2 owner
	owner=$(stat -c %u:%a "$f")
	run -125 --separate-stderr "$LOCKBOX" mutex "$f" create
	assert_stderr "mutex: $f: $msg"
	run -0 --separate-stderr "$LOCKBOX" mutex "$f" touch "$T/ran.mutex"
	assert_stderr ""
	assert [ -e "$T/ran.mutex" ]
	run -125 --separate-stderr "$LOCKBOX" slots -w 1 "$f" 2 touch "$T/ran"
	assert_stderr "slots: $f: $msg"
	# acquire --fd, as mutex does, locks it as any file, and writes nothing
	if ofd_build; then
		# shellcheck disable=SC2016 # expanded by the inner bash
		run -0 --separate-stderr bash -c 'exec 7<>"$2" && "$1" mutex acquire --fd 7 &&
			"$1" mutex "$2" check && "$1" mutex release --fd 7' sh "$LOCKBOX" "$f"
		assert_output "1
1"
	else
		# shellcheck disable=SC2016 # expanded by the inner bash
		run -125 --separate-stderr bash -c 'exec 7<>"$2" && exec "$1" mutex acquire --fd 7' sh \
			"$LOCKBOX" "$f"
		assert_stderr "mutex: $f: --fd needs open file description locks, which this build lacks"
	fi
	assert [ ! -e "$T/ran" ]
	assert_equal "$(stat -c %s "$f")" 0
	assert_equal "$(stat -c %u:%a "$f")" "$owner"
	# a read-only look at it is fine: nobody holds it
	run -0 "$LOCKBOX" mutex "$f" check
	assert_output 0
}

# bats test_tags=lockkind,privilege
@test "an empty file owned by another user, or with another link, is not adopted" {
	: >"$F"
	chown 65534 "$F" 2>/dev/null || skip "cannot give a file away"
	not_adopted "empty, and owned by UID 65534, neither the caller nor root; refusing to adopt it" "$F"
	chown 0 "$F"
	mkdir "$T/elsewhere"
	ln "$F" "$T/elsewhere/precious"
	not_adopted "empty, with 2 links; refusing to adopt it" "$F"
	rm "$T/elsewhere/precious"
	# adaptive's state file, planted empty under the name a run would use
	local state
	mkdir "$T/state"
	run -0 "$LOCKBOX" adaptive -d "$T/state" job true
	state=$(printf '%s\n' "$T"/state/job-*.lock)
	: >"$state"
	chown 65534 "$state"
	run -125 --separate-stderr "$LOCKBOX" adaptive -d "$T/state" job touch "$T/ran"
	assert_stderr "adaptive: $state: empty, and owned by UID 65534, neither the caller nor root; refusing to adopt it"
	assert [ ! -e "$T/ran" ]
	assert_equal "$(stat -c %s "$state")" 0
	# the safe case stays: root's own, one link
	run -0 "$LOCKBOX" mutex "$F" create
	run -0 head -c 16 "$F"
	assert_output "lockbox lock v1"
}

# bats test_tags=lockkind,privilege
@test "an empty file anyone may write, in a sticky shared directory, is not adopted" {
	mkdir "$T/shared"
	chmod 1777 "$T/shared"
	: >"$T/shared/x.lock"
	chmod 0666 "$T/shared/x.lock"
	not_adopted "empty, and writable by anyone in a shared directory; refusing to adopt it" \
		"$T/shared/x.lock"
	# the same file in a directory of root's own is root's own
	mkdir "$T/private"
	: >"$T/private/x.lock"
	chmod 0666 "$T/private/x.lock"
	run -0 "$LOCKBOX" mutex "$T/private/x.lock" create
	run -0 head -c 16 "$T/private/x.lock"
	assert_output "lockbox lock v1"
}

# bats test_tags=lockkind,privilege
@test "a user's own empty file in a sticky directory is adopted" {
	need_root_and_nobody
	local d
	d=$(world_readable_dir)
	chmod 1777 "$d"
	# shellcheck disable=SC2016 # expanded by the inner sh
	as_nobody sh -c ': >"$1"' sh "$d/x.lock"
	run -0 --separate-stderr as_nobody "$LOCKBOX" slots "$d/x.lock" 2 true
	run -0 head -c 16 "$d/x.lock"
	assert_output "lockbox lock v1"
}

# --- item: command lines stay private: mode 0600, only the command's name ---
# Records name their holders' commands and outlive them on disk while they
# hold: a lock file is for its owner unless made to be shared (--mode), and
# a record keeps the command's name, not its arguments (--record-args).

# bats test_tags=lockkind,privilege
@test "--mode gives a new lock file exactly that mode, and leaves an existing one alone" {
	run -0 sh -c 'umask 077 && exec "$@"' sh "$LOCKBOX" slots --mode 0664 "$F" 2 true
	assert_equal "$(stat -c %a "$F")" 664
	run -0 sh -c 'umask 022 && exec "$@"' sh "$LOCKBOX" mutex --mode 666 "$T/shared" true
	assert_equal "$(stat -c %a "$T/shared")" 666
	# only when lockbox creates the file
	run -0 "$LOCKBOX" slots --mode 0600 "$F" 2 true
	assert_equal "$(stat -c %a "$F")" 664
	run -0 "$LOCKBOX" mutex "$T/shared" true
	assert_equal "$(stat -c %a "$T/shared")" 666
}

# bats test_tags=lockkind,privilege
@test "--mode takes octal permissions the owner can read and write, and only where a file is made" {
	local bad
	for bad in 0444 0200 8 0x1b6 rw-r--r-- 04600 01666 '' 00000600; do
		run -125 --separate-stderr "$LOCKBOX" mutex --mode "$bad" "$F" touch "$T/ran"
		assert_stderr_regex "^mutex: invalid mode '$bad': [^"$'\n'"]+"$'\n'"Try 'lockbox mutex --help'\.\$"
	done
	run -125 --separate-stderr "$LOCKBOX" slots --mode 0644 "$F" check
	assert_stderr "slots: --mode does not go with check, list or held"$'\n'"Try 'lockbox slots --help'."
	run -125 --separate-stderr "$LOCKBOX" mutex acquire --mode 0644 --fd 0
	assert_stderr "mutex: --mode goes with COMMAND: the caller made FD's file"$'\n'"Try 'lockbox mutex --help'."
	assert [ ! -e "$F" ]
	assert [ ! -e "$T/ran" ]
}

# bats test_tags=lockkind,privilege
@test "a pool made with --mode 0666 is shared with another user; a default one is not, nor one for a group the user is not in" {
	need_root_and_nobody
	local d
	d=$(world_readable_dir)
	run -0 "$LOCKBOX" mutex --mode 0666 "$d/shared.lock" true
	run -0 --separate-stderr as_nobody "$LOCKBOX" mutex "$d/shared.lock" true
	run -0 "$LOCKBOX" mutex "$d/private.lock" true
	# the refusal says how a lock is shared
	run -125 --separate-stderr as_nobody "$LOCKBOX" mutex "$d/private.lock" true
	assert_stderr "mutex: $d/private.lock: Permission denied: the file is UID 0's, mode 0600; a lock shared between users is created with --mode 0664 (a group) or 0666 (everyone), or chmod it"
	run -125 --separate-stderr as_nobody "$LOCKBOX" mutex "$d/private.lock" list
	assert_stderr "mutex: $d/private.lock: Permission denied: the file is UID 0's, mode 0600; a lock shared between users is created with --mode 0664 (a group) or 0666 (everyone), or chmod it"
	# a pool for a group (--mode 0664) that the user is not in: said so,
	# not told to use the mode the file has
	run -0 "$LOCKBOX" mutex --mode 0664 "$d/group.lock" true
	chgrp 0 "$d/group.lock"
	run -125 --separate-stderr as_nobody "$LOCKBOX" mutex "$d/group.lock" true
	assert_stderr "mutex: $d/group.lock: Permission denied: the file is UID 0's, mode 0664, for group 0, which this user is not in; join that group, or have the lock made for everyone with --mode 0666"
}

# bats test_tags=lockkind
@test "a record keeps the command's name, not its arguments; --record-args keeps them" {
	start_holder_with slots "$F" 2 env SECRET=hunter2
	run -0 --separate-stderr "$LOCKBOX" slots "$F" list
	assert_regex "${lines[1]}" "^$HOLDER_SLOT +$HOLDER_PID +[^ ]+ +env\$"
	run -0 --separate-stderr "$LOCKBOX" slots --json "$F" list
	assert_regex "$output" '"command":"env"'
	run -75 --separate-stderr "$LOCKBOX" slots "$F" 1 true
	assert_stderr_regex "^slots: $(re_quote "$F"): held by $(named_re "$HOLDER_PID" env)\$"
	run -1 grep -c hunter2 "$F"
	# the record of a holder from a shell (acquire --fd) too
	if ofd_build; then
		# shellcheck disable=SC2016 # expanded by the inner bash
		spawn bash -c 'exec 7<>"$2" && "$1" slots acquire --fd 7 2 && exec sleep 600' \
			sh "$LOCKBOX" "$F" hunter2
		wait_for held_is "$F" 2
		run -1 grep -c hunter2 "$F"
		run -0 --separate-stderr "$LOCKBOX" slots "$F" list
		assert_regex "$output" $'\n'"[0-9] +$SPAWN_PID +[^ ]+ +bash\$"
		stop_pid "$SPAWN_PID"
	fi
	stop_pid "$HOLDER_PID"
	# asked for, the whole command line
	start_holder_with slots --record-args "$F" 2 env SECRET=hunter2
	run -0 --separate-stderr "$LOCKBOX" slots "$F" list
	assert_regex "${lines[1]}" " env SECRET=hunter2 sh -c "
	run -0 grep -c hunter2 "$F"
	stop_pid "$HOLDER_PID"
}

# bats test_tags=lockkind,privilege
@test "--record-args goes with COMMAND or acquire" {
	run -125 --separate-stderr "$LOCKBOX" slots --record-args "$F" list
	assert_stderr "slots: --record-args goes with COMMAND or acquire"$'\n'"Try 'lockbox slots --help'."
	run -125 --separate-stderr "$LOCKBOX" mutex release --record-args --fd 0
	assert_stderr "mutex: --record-args goes with COMMAND or acquire"$'\n'"Try 'lockbox mutex --help'."
}

# --- item: the shell library never lets bash create or follow the lock path --
# In a world-writable sticky directory another user may flip the lock path
# between a file, a symlink and nothing while root's script takes the lock.
# bash's `<>` creates the target of a dangling symlink and opens whatever the
# path names then; the library must leave making the file to the binary and
# open only the file that was checked.

# flipper PATH STOP BAIT TARGET...: as nobody, flip PATH as fast as it goes
# between a symlink to each TARGET and a hard link to BAIT (an empty file of
# nobody's), each put in place by rename, so PATH is seldom missing; every
# tenth round it is removed. Until the file STOP exists (at most 5 million
# rounds); prints the rounds.
flipper() {
	# shellcheck disable=SC2016 # perl's variables
	as_nobody perl -e '
		my ($path, $stop, $bait, @targets) = @ARGV;
		my $n = 0;
		while ($n < 5_000_000 && !-e $stop) {
			for my $t (@targets) {
				symlink($t, "$path.$$") and rename("$path.$$", $path);
				link($bait, "$path.$$") and rename("$path.$$", $path);
			}
			unlink($path) if $n % 10 == 0;
			$n++;
		}
		unlink("$path.$$");
		print "$n\n";
	' "$@"
}

# bats test_tags=lockkind,privilege
@test "a path flipped between file, symlink and nothing by another user: nothing outside is made or written" {
	need_ofd	# the library locks the fd its shell opened: --fd
	need_root_and_nobody
	command -v perl >/dev/null || skip "needs perl"
	local d lib attempts=150
	d=$(world_readable_dir)
	chmod 1777 "$d"
	lib=$("$LOCKBOX" --shell-lib)
	printf 'precious data\n' >"$T/precious"
	: >"$T/empty"
	chmod 0600 "$T/precious" "$T/empty"
	local before
	before=$(sha "$T/precious")
	as_nobody mkdir "$d/bait"
	as_nobody touch "$d/bait/file"
	spawn flipper "$d/x.lock" "$d/stop" "$d/bait/file" "$T/precious" "$T/empty" "$T/missing"
	local flip=$SPAWN_PID
	# root's script takes and drops the lock, then removes the file, so
	# that every attempt meets the race anew
	# shellcheck disable=SC2016 # expanded by the inner bash
	run -0 --separate-stderr bash -c '
		. "$1"
		for ((i = 0; i < $3; i++)); do
			rc=0
			acquire_mutex "$2" || rc=$?
			if ((rc == 0)); then
				"$LOCKBOX" mutex "$2" check >/dev/null
				release_mutex "$2"
			fi
			printf "%s\n" "$rc"
			rm -f "$2"
		done' sh "$lib" "$d/x.lock" "$attempts"
	: >"$d/stop"
	reap "$flip"
	assert_equal "$REAP_STATUS" 0
	assert [ "$(cat "$SPAWN_OUT")" -gt 0 ]
	# every attempt took the lock or refused the path (125), opening it
	# again where it was replaced since the library opened it (75: busy)
	assert_equal "${#lines[@]}" "$attempts"
	run -1 grep -vxE '0|75|125' <<<"$output"
	assert [ ! -e "$T/missing" ]
	assert_equal "$(sha "$T/precious")" "$before"
	assert_equal "$(stat -c %u:%a:%s "$T/precious")" 0:600:14
	assert_equal "$(stat -c %u:%a:%s "$T/empty")" 0:600:0
	# nobody's file was never written by root
	assert_equal "$(stat -c %u:%s "$d/bait/file")" 65534:0
}

# bats test_tags=lockkind,privilege
@test "the library refuses a FIFO, a symlink and another user's file in a sticky directory, without blocking" {
	need_ofd	# the library locks the fd its shell opened: --fd
	need_root_and_nobody
	local d lib
	d=$(world_readable_dir)
	chmod 1777 "$d"
	lib=$("$LOCKBOX" --shell-lib)
	as_nobody mkfifo "$d/fifo.lock"
	as_nobody ln -s "$T/missing" "$d/link.lock"
	# shellcheck disable=SC2016 # expanded by the inner sh
	as_nobody sh -c ': >"$1" && "$2" mutex --mode 0644 "$3" create' sh \
		"$d/empty.lock" "$LOCKBOX" "$d/full.lock"
	# shellcheck disable=SC2016 # expanded by the inner bash
	run -0 --separate-stderr timeout 20 bash -c '
		. "$1"
		for f in fifo link empty full; do
			rc=0
			acquire_mutex "$2/$f.lock" || rc=$?
			printf "%s " "$rc"
		done' sh "$lib" "$d"
	assert_output "125 125 125 125 "
	assert_stderr "mutex: $d/fifo.lock: not a regular file
mutex: $d/link.lock: is a symbolic link; refusing to follow it
mutex: $d/empty.lock: $STICKY_REFUSAL
mutex: $d/full.lock: $STICKY_REFUSAL"
	assert [ ! -e "$T/missing" ]
	assert_equal "$(stat -c %s "$d/empty.lock")" 0
	# a pool made to be shared (--mode 0666) is another user's all the same
	as_nobody "$LOCKBOX" mutex --mode 0666 "$d/shared.lock" create
	# shellcheck disable=SC2016 # expanded by the inner bash
	run -125 --separate-stderr bash -c '. "$1" && acquire_mutex "$2"' sh "$lib" "$d/shared.lock"
	assert_stderr "mutex: $d/shared.lock: $STICKY_REFUSAL"
}

# --- item: adaptive signals only the processes that hold the atom's lock

# bats test_tags=lockkind
@test "adaptive: a forged run naming a process that has the state file open, unlocked, never signals it" {
	need_lockhold
	local d=$T/state victim vstart f
	run -0 "$LOCKBOX" adaptive -d "$d" x true
	f=$(echo "$d"/x-*.lock)
	# a bystander that merely has the state file open, as `exec 9<F` does
	spawn sh -c 'exec sleep 600' 9<"$f"
	victim=$SPAWN_PID
	wait_for test -e "/proc/$victim/fd/9"
	vstart=$(proc_starttime "$victim")
	# someone else holds the lock; the records say the bystander's job does
	lockhold "$f" 4096 1
	forge_run "$f" "$victim"
	run -0 --separate-stderr "$LOCKBOX" adaptive -d "$d" --log "$T/log" -e 0 -x 1s -g 300ms \
		x touch "$T/took"
	assert [ -e "$T/took" ]
	refute_regex "$stderr" unreadable
	# the holder of the lock was expired; the bystander never got a signal
	run -0 grep -E "signal sig=CONT pids=$LOCKHOLD_PID\$" "$T/log"
	run -1 grep -E "pids=(.*,)?$victim(,|\$)" "$T/log"
	assert_equal "$(proc_starttime "$victim")" "$vstart"
	assert_equal "$(awk '{ print $3 }' "/proc/$victim/stat")" S
}

# bats test_tags=lockkind,privilege
@test "adaptive: a state directory others can write to is refused, 125, nothing created" {
	local d=$T/open
	mkdir "$d"
	chmod 0777 "$d"
	run -125 --separate-stderr "$LOCKBOX" adaptive -d "$d" x touch "$T/ran"
	assert_stderr "adaptive: $d/: state directory writable by others (mode 0777, not sticky); refusing it; use another with -d DIR or LOCKBOX_DIR"
	chmod 0775 "$d"
	run -125 --separate-stderr "$LOCKBOX" adaptive -d "$d" x touch "$T/ran"
	assert_stderr "adaptive: $d/: state directory writable by others (mode 0775, not sticky); refusing it; use another with -d DIR or LOCKBOX_DIR"
	assert [ ! -e "$T/ran" ]
	run -0 ls -A "$d"
	assert_output ""
	# sticky, and the file is the caller's own: fine
	chmod 1777 "$d"
	run -0 --separate-stderr "$LOCKBOX" adaptive -d "$d" x touch "$T/ran"
	assert [ -e "$T/ran" ]
	# and status still reads any directory
	run -0 --separate-stderr "$LOCKBOX" adaptive -d "$d" status x
}

# bats test_tags=lockkind,privilege
@test "adaptive: another user's state file in a sticky directory, or their directory, is refused" {
	need_root_and_nobody
	local d f before
	d=$(world_readable_dir)
	chmod 1777 "$d"
	# nobody's own state file in a sticky directory is fine for nobody
	run -0 --separate-stderr as_nobody "$LOCKBOX" adaptive -d "$d" x touch "$d/nobody-ran"
	assert [ -e "$d/nobody-ran" ]
	f=$(echo "$d"/x-*.lock)
	assert_equal "$(stat -c %u "$f")" 65534
	# root does not trust it: nobody could have forged it, or may swap it
	# (the lock file rules refuse it first, or with fs.protected_regular
	# the kernel does)
	run -125 --separate-stderr "$LOCKBOX" adaptive -d "$d" x touch "$T/ran"
	assert_regex "$stderr" "^adaptive: $f: (owned by UID 65534 in a shared sticky directory, .*|Permission denied)\$"
	# nor when it is a lock file shared with others: it is still nobody's
	as_nobody chmod 0666 "$f"
	before=$(sha "$f")
	run -125 --separate-stderr "$LOCKBOX" adaptive -d "$d" x touch "$T/ran"
	assert_stderr "adaptive: $f: $STICKY_REFUSAL"
	assert [ ! -e "$T/ran" ]
	assert_equal "$(sha "$f")" "$before"
	# a directory that belongs to another user, even one only they can write to
	chmod 0755 "$d"
	chown 65534:65534 "$d"
	run -125 --separate-stderr "$LOCKBOX" adaptive -d "$d" y touch "$T/ran"
	assert_stderr "adaptive: $d/: state directory owned by uid 65534, who could replace its files; refusing it; use another with -d DIR or LOCKBOX_DIR"
	assert [ ! -e "$T/ran" ]
	run -0 --separate-stderr as_nobody "$LOCKBOX" adaptive -d "$d" y touch "$d/nobody-ran-y"
}

# --- item: a file size limit (ulimit -f) is an error lockbox reports, not its death

# XFSZ_IGNORED: a command that prints 1 when it was started with SIGXFSZ
# (25, bit 24 of SigIgn) ignored, else 0.
# shellcheck disable=SC2016 # for the command's own sh
XFSZ_IGNORED='m=$(sed -n "s/^SigIgn:[[:space:]]*//p" /proc/$$/status) && echo $(((0x$m >> 24) & 1))'

# records_sha FILE: the checksum of FILE's records (all but the header,
# whose progress count every visit moves on) and its size.
records_sha() {
	printf '%s %s\n' "$(tail -c +4097 "$1" | sha256sum)" "$(stat -c %s "$1")"
}

# bats test_tags=lockkind,privilege
@test "slots and mutex under a file size limit: 125 'File too large', no partial record" {
	local applet args before
	for applet in slots mutex; do
		args=("$F")
		[[ $applet == slots ]] && args+=(2)
		rm -f "$F"
		# room for the header of a new file, not for a record: lockbox
		# used to die of SIGXFSZ here (153)
		run -125 --separate-stderr prlimit --fsize=4096 "$LOCKBOX" "$applet" "${args[@]}" touch "$T/ran"
		assert_stderr "$applet: $F: cannot write: File too large"
		assert [ ! -e "$T/ran" ]
		assert_equal "$(stat -c %s "$F")" 4096
		# a record half-written over an old one: the limit cuts into it
		run -0 "$LOCKBOX" "$applet" "${args[@]}" true
		before=$(records_sha "$F")
		run -125 --separate-stderr prlimit --fsize=4200 "$LOCKBOX" "$applet" "${args[@]}" touch "$T/ran"
		assert_stderr "$applet: $F: cannot write: File too large"
		assert [ ! -e "$T/ran" ]
		assert_equal "$(records_sha "$F")" "$before"
		run -0 --separate-stderr "$LOCKBOX" "$applet" "${args[@]}" sh -c "$SHOW_SLOT"
		assert_output 1
	done
}

# bats test_tags=lockkind,privilege
@test "adaptive under a file size limit: 125 'File too large'; a full log is reported once, the run goes on" {
	local d=$T/state f before
	run -125 --separate-stderr prlimit --fsize=4096 "$LOCKBOX" adaptive -d "$d" x touch "$T/ran"
	f=$(echo "$d"/x-*.lock)
	assert_stderr "adaptive: $f: cannot write: File too large"
	assert [ ! -e "$T/ran" ]
	assert_equal "$(stat -c %s "$f")" 4096
	run -0 "$LOCKBOX" adaptive -d "$d" -e 0 x true
	before=$(records_sha "$f")
	run -125 --separate-stderr prlimit --fsize=4200 "$LOCKBOX" adaptive -d "$d" -e 0 x touch "$T/ran"
	assert_stderr "adaptive: $f: cannot write: File too large"
	assert [ ! -e "$T/ran" ]
	assert_equal "$(records_sha "$f")" "$before"
	# the log is at the limit: lines are dropped whole, with one warning
	head -c 8192 /dev/zero | tr '\0' 'x' >"$T/log"
	run -0 --separate-stderr prlimit --fsize=8192 "$LOCKBOX" adaptive -d "$d" -e 0 --log "$T/log" \
		x touch "$T/ran"
	assert_stderr "adaptive: $T/log: cannot write to the log: File too large"
	assert [ -e "$T/ran" ]
	assert_equal "$(stat -c %s "$T/log")" 8192
}

# bats test_tags=lockkind,privilege
@test "under a file size limit, the command still gets SIGXFSZ as lockbox got it" {
	local big=$T/big
	# shellcheck disable=SC2016 # for the command's own sh
	local fill='exec head -c 20000 /dev/zero >"$1"'
	run -153 prlimit --fsize=10000 "$LOCKBOX" slots "$F" 2 sh -c "$fill" sh "$big"
	run -153 prlimit --fsize=10000 "$LOCKBOX" mutex "$F" sh -c "$fill" sh "$big"
	run -153 prlimit --fsize=10000 "$LOCKBOX" adaptive -d "$T/state" -e 0 x sh -c "$fill" sh "$big"
	# (a failing command is retried until TIMEOUT: --retry-on stops at once)
	run -153 prlimit --fsize=10000 "$LOCKBOX" waitfor --retry-on 75 1 1 sh -c "$fill" sh "$big"
	run -0 "$LOCKBOX" slots "$F" 2 sh -c "$XFSZ_IGNORED"
	assert_output 0
	run -0 "$LOCKBOX" adaptive -d "$T/state" -e 0 x sh -c "$XFSZ_IGNORED"
	assert_output 0
	run -0 "$LOCKBOX" waitfor 1 1 sh -c "$XFSZ_IGNORED"
	assert_output 0
	# started with it ignored, the command finds it ignored
	run -0 sh -c 'trap "" XFSZ; exec "$@"' sh "$LOCKBOX" mutex "$F" sh -c "$XFSZ_IGNORED"
	assert_output 1
	run -0 sh -c 'trap "" XFSZ; exec "$@"' sh "$LOCKBOX" waitfor 1 1 sh -c "$XFSZ_IGNORED"
	assert_output 1
}

# --- item: adaptive's log is a regular file; an expiry never half-blind; status prints safely

# bats test_tags=lockkind
@test "adaptive --log: a FIFO, a symlink, a directory or a device is refused at once, 125" {
	local target=$T/target
	mkfifo "$T/fifo"
	run -125 --separate-stderr within 10 "$LOCKBOX" adaptive -d "$T/state" --log "$T/fifo" x touch "$T/ran"
	assert_stderr "adaptive: $T/fifo: not a regular file"
	# with a reader, the FIFO opens, and is refused all the same
	# shellcheck disable=SC2016 # for the reader's own sh
	spawn sh -c 'exec cat <"$1" >/dev/null' sh "$T/fifo"
	run -125 --separate-stderr within 10 "$LOCKBOX" adaptive -d "$T/state" --log "$T/fifo" x touch "$T/ran"
	assert_stderr "adaptive: $T/fifo: not a regular file"
	stop_pid "$SPAWN_PID"
	ln -s "$target" "$T/link"
	run -125 --separate-stderr "$LOCKBOX" adaptive -d "$T/state" --log "$T/link" x touch "$T/ran"
	assert_stderr "adaptive: $T/link: is a symbolic link; refusing to follow it"
	assert [ ! -e "$target" ]
	printf 'precious\n' >"$target"
	run -125 --separate-stderr "$LOCKBOX" adaptive -d "$T/state" --log "$T/link" x touch "$T/ran"
	assert_stderr "adaptive: $T/link: is a symbolic link; refusing to follow it"
	assert_equal "$(cat "$target")" precious
	mkdir "$T/dir"
	run -125 --separate-stderr "$LOCKBOX" adaptive -d "$T/state" --log "$T/dir" x touch "$T/ran"
	assert_stderr "adaptive: $T/dir: not a regular file"
	run -125 --separate-stderr "$LOCKBOX" adaptive -d "$T/state" --log /dev/null x touch "$T/ran"
	assert_stderr "adaptive: /dev/null: not a regular file"
	assert [ ! -e "$T/ran" ]
	run -0 --separate-stderr "$LOCKBOX" adaptive -d "$T/state" --log "$T/log" x touch "$T/ran"
	assert [ -e "$T/ran" ]
	assert_regex "$(cat "$T/log")" " x ran pid="
}

# only_std_fds CMD...: CMD with every descriptor above 2 closed, so that a
# descriptor limit counts from a known start.
only_std_fds() {
	local f n
	for f in /proc/"$BASHPID"/fd/*; do
		n=${f##*/}
		if ((n > 2)); then
			exec {n}>&-
		fi
	done
	exec "$@"
}

# bats test_tags=lockkind,privilege
@test "adaptive: out of descriptors while expiring, nobody is signalled: 125, said and logged" {
	local d=$T/state m=$T/job pid
	# a job of nine processes, each holding the lock (they inherit it)
	# shellcheck disable=SC2016 # for the job's own sh
	spawn "$LOCKBOX" adaptive -d "$d" -e 0 x sh -c \
		'for i in 1 2 3 4 5 6 7 8; do sleep 600 & echo $! >>"$1.pids"; done; echo $$ >"$1.tmp" && mv "$1.tmp" "$1"; wait' \
		sh "$m"
	wait_for test -s "$m"
	while read -r pid; do
		track_pid "$pid"
	done < <(cat "$m" "$m.pids")
	# room to open the files and read /proc, not to pin every process
	run -125 --separate-stderr prlimit --nofile=10 bash -c "$(declare -f only_std_fds); only_std_fds \"\$@\"" sh \
		"$LOCKBOX" adaptive -d "$d" --log "$T/log" -e 0 -x 0 -g 300ms x touch "$T/ran"
	# strerror(EMFILE): glibc's words, or musl's
	assert_stderr_regex "^adaptive: x: cannot expire the run: checking its processes for SIGCONT: (Too many open files|No file descriptors available)\$"
	assert [ ! -e "$T/ran" ]
	run -0 grep -E " x expire-error sig=CONT error=(Too many open files|No file descriptors available)\$" "$T/log"
	run -1 grep -E " x signal " "$T/log"
	# the whole job is still there, untouched
	while read -r pid; do
		assert_equal "$(awk '{ print $3 }' "/proc/$pid/stat")" S
	done < <(cat "$m" "$m.pids")
}

# bats test_tags=lockkind
@test "adaptive status and messages print names from a forged state file without escapes" {
	local d=$T/state f evil
	evil=$'\e]0;owned\a\e[31mred\nline two \xc2\x9b31m \xff'
	run -0 "$LOCKBOX" adaptive -d "$d" x true
	f=$(echo "$d"/x-*.lock)
	# the atom area's NAME (area offset 128, its length at 116) forged
	poke "$f" $((64 + 128)) "$(printf '%s' "$evil" | od -An -v -tx1 | tr -d ' \n' | sed 's/../\\x&/g')"
	poke "$f" $((64 + 116)) "$(le 2 "$(printf '%s' "$evil" | wc -c)")"
	reseal "$f"
	# a file named to be printed, beside it
	: >"$d/$evil-0badf00d.lock"
	run -0 --separate-stderr "$LOCKBOX" adaptive -d "$d" status
	# one atom, its name on one line, printable, valid UTF-8
	assert_line --index 0 '?]0;owned??[31mred?line two ?31m ?'
	assert_equal "$(grep -c '^  file ' <<<"$output")" 1
	refute_output --partial $'\e'
	refute_output --partial $'\xc2\x9b'
	iconv -f UTF-8 -t UTF-8 <<<"$output" >/dev/null
	# JSON carries the exact name, escaped
	run -0 --separate-stderr "$LOCKBOX" adaptive -d "$d" --json status
	valid_json <<<"$output"
	# the refusal to share the file names its atom, printably
	run -125 --separate-stderr "$LOCKBOX" adaptive -d "$d" -e 0 x true
	assert_stderr "adaptive: x: $f belongs to the atom '?]0;owned??[31mred?line two ?31m ?'; refusing to share it"
}

# --- a lock file is created whole or not at all

# no_temp DIR: nothing of a creation's temporary files is left in DIR.
no_temp() {
	run -0 find "$1" -maxdepth 1 -name '.lockbox-*'
	assert_output ""
}

# bats test_tags=lockkind,privilege
@test "a new lock file whose header cannot be written is not left behind (ulimit -f)" {
	local applet args
	for applet in slots mutex; do
		args=("$F")
		[[ $applet == slots ]] && args+=(2)
		run -125 --separate-stderr prlimit --fsize=2048 "$LOCKBOX" "$applet" "${args[@]}" touch "$T/ran"
		assert_stderr "$applet: $F: cannot write header: File too large"
		assert [ ! -e "$T/ran" ]
		assert [ ! -e "$F" ]
		no_temp "$T"
	done
	run -125 --separate-stderr prlimit --fsize=2048 "$LOCKBOX" slots "$F" create
	assert_stderr "slots: $F: cannot write header: File too large"
	assert [ ! -e "$F" ]
	run -125 --separate-stderr prlimit --fsize=2048 "$LOCKBOX" adaptive -d "$T/state" x touch "$T/ran"
	assert_stderr_regex "^adaptive: $T/state/x-[^ ]*\\.lock: cannot write header: File too large\$"
	run -0 find "$T/state" -type f
	assert_output ""
	no_temp "$T/state"
	# with room, the same file is made as before
	run -0 "$LOCKBOX" slots "$F" 2 true
	assert_equal "$(head -c 16 "$F")" "lockbox lock v1"
}

# bats test_tags=lockkind,privilege
@test "on a full disk nothing is left: no new file, an adopted empty file stays empty" {
	((EUID == 0)) || skip "needs root to mount a small file system"
	command -v mke2fs >/dev/null || skip "needs mke2fs"
	local m=$T/mnt img=$T/fs.img st1 err1 st2 err2 st3 err3 left size entries i
	truncate -s 1M "$img"
	mke2fs -q -F -b 1024 -m 0 "$img"
	mkdir "$m"
	mount -o loop "$img" "$m" 2>/dev/null || skip "cannot mount a loop file system here"
	# two 1 KiB blocks free: half a header fits, not all of it
	head -c 2048 /dev/zero >"$m/reserve"
	head -c 2M /dev/zero >"$m/fill" 2>/dev/null || true
	# what filling left (blocks an indirect block could not use) goes too
	for i in 1 2 3 4 5 6 7 8; do
		(($(stat -f -c %a "$m") > 0)) || break
		head -c 1024 /dev/zero >"$m/more$i" 2>/dev/null || true
	done
	rm "$m/reserve"
	(($(stat -f -c %a "$m") == 2)) || { umount "$m"; skip "cannot leave exactly two blocks free"; }
	: >"$m/empty"
	# gathered first, then unmounted, then judged: no assertion leaves it mounted
	st2=0 err2=$("$LOCKBOX" slots "$m/empty" 2 true 2>&1) || st2=$?
	size=$(stat -c %s "$m/empty")
	st1=0 err1=$("$LOCKBOX" slots "$m/new" 2 true 2>&1) || st1=$?
	st3=0 err3=$("$LOCKBOX" slots "$m/new" check 2>&1) || st3=$?
	left=$(stat -f -c %a "$m")
	entries=$(find "$m" -mindepth 1 -maxdepth 1 ! -name 'more*' -printf '%f\n' | LC_ALL=C sort | paste -sd' ')
	umount "$m"
	assert_equal "$st1" 125
	assert_equal "$err1" "slots: $m/new: cannot write header: No space left on device"
	# an empty file lockbox adopts stays empty
	assert_equal "$st2" 125
	assert_equal "$err2" "slots: $m/empty: cannot write header: No space left on device"
	assert_equal "$size" 0
	# nothing was left: the new file does not exist, no blocks were kept
	assert_equal "$st3:$err3" "0:0"
	assert_equal "$left" 2
	assert_equal "$entries" "empty fill lost+found"
}

# bats test_tags=lockkind,wait
@test "creators racing for a missing file end with one valid file, all of them using it" {
	local i
	# shellcheck disable=SC2016 # for the command's own sh
	local show='echo "$LOCKBOX_SLOT" >>"$1"'
	for i in $(seq 1 12); do
		"$LOCKBOX" mutex -w 30s "$F" sh -c "$show" sh "$T/ran.$i" &
	done
	wait
	run -0 cat "$T"/ran.*
	assert_equal "${#lines[@]}" 12
	assert_equal "$(sort -u <<<"$output")" 1
	assert_equal "$(stat -c %s "$F")" 4352
	assert_equal "$(head -c 16 "$F")" "lockbox lock v1"
	no_temp "$T"
}

# short_write_lib: $SHORT_SO, an LD_PRELOAD library whose pwrite writes only
# half of a 4096-byte write at offset 0 (a header), as a file system filling
# up may; with SHORT_WRITE=fail the rest then fails with ENOSPC. Skips
# where it cannot be built or does not take (a static lockbox).
short_write_lib() {
	command -v cc >/dev/null || skip "needs a C compiler"
	SHORT_SO=$T/short.so
	cat >"$T/short.c" <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

static ssize_t cut(int fd, const void *b, size_t n, off_t off, const char *sym)
{
	ssize_t (*real)(int, const void *, size_t, off_t) =
	    (ssize_t (*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, sym);
	const char *how = getenv("SHORT_WRITE");

	if (off == 0 && n == 4096)
		return real(fd, b, n / 2, off);
	if (how != NULL && how[0] == 'f' && off == 2048 && n == 2048) {
		errno = ENOSPC;
		return -1;
	}
	return real(fd, b, n, off);
}

ssize_t pwrite(int fd, const void *b, size_t n, off_t off)
{
	return cut(fd, b, n, off, "pwrite");
}

ssize_t pwrite64(int fd, const void *b, size_t n, off_t off)
{
	return cut(fd, b, n, off, "pwrite64");
}

__attribute__((constructor)) static void seen(void)
{
	const char *p = getenv("SHORT_SEEN");

	if (p != NULL)
		close(open(p, O_WRONLY | O_CREAT, 0600));
}
C
	cc -shared -fPIC -o "$SHORT_SO" "$T/short.c" -ldl 2>/dev/null || skip "cannot build a preload library"
	SHORT_SEEN=$T/seen LD_PRELOAD=$SHORT_SO "$LOCKBOX" --version >/dev/null 2>&1 ||
		skip "$LOCKBOX does not run with a preload library (a sanitizer build?)"
	[[ -e $T/seen ]] || skip "LD_PRELOAD does not reach $LOCKBOX (a static binary?)"
}

# bats test_tags=lockkind
@test "a header write cut short is finished, or fails with its own errno and leaves nothing" {
	short_write_lib
	# cut short, then finished: a whole header, the run goes on
	run -0 --separate-stderr env LD_PRELOAD="$SHORT_SO" "$LOCKBOX" slots "$F" 2 true
	assert_stderr ""
	assert_equal "$(head -c 16 "$F")" "lockbox lock v1"
	run -0 "$LOCKBOX" slots "$F" check
	assert_output 0
	rm "$F"
	# cut short, then the disk is full: no file with half a header
	run -125 --separate-stderr env LD_PRELOAD="$SHORT_SO" SHORT_WRITE=fail "$LOCKBOX" slots "$F" 2 true
	assert_stderr "slots: $F: cannot write header: No space left on device"
	assert [ ! -e "$F" ]
	no_temp "$T"
	# an empty file to adopt (slots does; mutex locks it as any file) is left empty
	: >"$F"
	run -125 --separate-stderr env LD_PRELOAD="$SHORT_SO" SHORT_WRITE=fail "$LOCKBOX" slots "$F" 2 true
	assert_stderr "slots: $F: cannot write header: No space left on device"
	assert_equal "$(stat -c %s "$F")" 0
}

# bats test_tags=lockkind,privilege
@test "a setgid lockbox ignores LOCKBOX_PG_HELPER, LOCKBOX_DIR, XDG_STATE_HOME and HOME from its caller" {
	need_root_and_nobody
	getent group daemon >/dev/null || skip "needs a group daemon"
	local d bin ran st
	d=$(world_readable_dir)
	bin=$d/lockbox
	cp "$LOCKBOX" "$bin"
	chgrp daemon "$bin"
	chmod 2755 "$bin"
	as_nobody "$bin" --version >/dev/null 2>&1 ||
		skip "a set-group-ID copy of $LOCKBOX cannot run here (a sanitizer build?)"
	mkdir -m 0755 "$d/state" "$d/home"
	chown 65534:65534 "$d/state" "$d/home"
	mkdir -m 0777 "$d/out"
	ran=$d/out/ran
	run -125 --separate-stderr as_nobody env -u XDG_STATE_HOME LOCKBOX_DIR="$d/state" HOME="$d/home" \
		"$bin" adaptive x touch "$ran"
	assert_stderr "adaptive: no state directory: set LOCKBOX_DIR or HOME, or use -d"
	run -125 --separate-stderr as_nobody env -u LOCKBOX_DIR XDG_STATE_HOME="$d/state" HOME="$d/home" \
		"$bin" adaptive x touch "$ran"
	assert_stderr "adaptive: no state directory: set LOCKBOX_DIR or HOME, or use -d"
	assert [ ! -e "$ran" ]
	run -0 find "$d/state" "$d/home" -mindepth 1
	assert_output ""
	# without setgid the caller's LOCKBOX_DIR is where state goes, as documented
	run -0 as_nobody env LOCKBOX_DIR="$d/state" "$LOCKBOX" adaptive x true
	run -0 find "$d/state" -name 'x-*.lock'
	refute_output ""
	# the helper: run as named without setgid, never with it
	printf '#!/bin/sh\ntouch %s\n' "$ran" >"$d/evil"
	chmod 0755 "$d/evil"
	as_nobody env LOCKBOX_PG_HELPER="$d/evil" "$LOCKBOX" mutex "postgresql://127.0.0.1:1/db?lock=x" true 2>/dev/null || true
	[[ -e $ran ]] || skip "this build runs no PostgreSQL helper"
	rm "$ran"
	st=0
	as_nobody env LOCKBOX_PG_HELPER="$d/evil" "$bin" mutex "postgresql://127.0.0.1:1/db?lock=x" true 2>"$d/out/err" || st=$?
	assert_equal "$st" 125
	assert [ ! -e "$ran" ]
	run -0 cat "$d/out/err"
	refute_output --partial "$d/evil"
}

# bats test_tags=lockkind,privilege
@test "--record-args: a job's arguments stay readable after it ended, until its slot is taken again (as documented)" {
	need_root_and_nobody
	local d f
	d=$(world_readable_dir)
	f=$d/lock
	run -0 "$LOCKBOX" slots --mode 0644 "$f" create
	start_holder_with slots "$f" 3
	run -0 "$LOCKBOX" slots --record-args "$f" 3 true hunter2
	# ended: nobody holds slot 2, list says so, yet the file still has it
	run -0 --separate-stderr "$LOCKBOX" slots "$f" list
	assert_equal "${#lines[@]}" 2
	refute_output --partial hunter2
	run -0 as_nobody grep -c hunter2 "$f"
	# check and list write nothing: still there
	run -0 as_nobody "$LOCKBOX" slots "$f" list
	run -0 grep -c hunter2 "$f"
	# the slot taken again: the record is the new holder's
	run -0 "$LOCKBOX" slots "$f" 3 sh -c "$SHOW_SLOT"
	assert_output 2
	run -1 grep -c hunter2 "$f"
	stop_pid "$HOLDER_PID"
}
