#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# shellcheck shell=bats
# mutex for flock(1) users: any file locked as flock(1) locks it (and
# both excluding each other on it), flock(1)'s option spellings, shared
# locks and their one queue, held, waiters in list, and a holder that
# exited while its children keep the lock.

load test_helper
# bats file_tags=lockkind

# lists_waiter F PID: mutex F's list shows PID as a waiter.
lists_waiter() {
	"$LOCKBOX" mutex "$1" list 2>/dev/null | grep -qE "^- +$2 "
}


need_flock() {
	command -v flock >/dev/null || skip "needs flock(1) (util-linux)"
	[[ -r /proc/locks ]] || skip "no /proc/locks"
}

# flock_holds FILE: some process holds a flock(2) lock on FILE.
flock_holds() {
	local id
	id=$(lock_id "$1") || return 1
	awk -v id="$id" '$2 == "FLOCK" && $6 == id { n++ } END { exit n ? 0 : 1 }' /proc/locks
}

# flock_waits FILE N: N flock(2) requests wait on FILE.
flock_waits() {
	local id
	id=$(lock_id "$1") || return 1
	(($(awk -v id="$id" '$2 == "->" && $3 == "FLOCK" && $7 == id { n++ }
		END { print n + 0 }' /proc/locks) == $2))
}

# marked PATH: the command a holder runs: say so in PATH, then hold on.
# shellcheck disable=SC2016 # expanded by the holder's sh
MARK_AND_HOLD='echo "$$" >"$1.tmp" && mv "$1.tmp" "$1" && exec sleep 600'

# hold_marked MARK CMD...: start CMD... (flock or mutex and its options
# and file) with MARK_AND_HOLD as its command, and wait until it holds:
# MARK then holds the PID of the command's sleep; SPAWN_PID is CMD's.
# Both are killed at teardown (a tool that forks leaves its command's
# sleep behind it otherwise).
hold_marked() {
	local mark=$1
	shift
	spawn "$@" sh -c "$MARK_AND_HOLD" sh "$mark"
	wait_for test -s "$mark"
	track_pid "$(cat "$mark")"
}

@test "any file: a script, a data file, a directory, an empty file are locked without a write" {
	need_flock
	local f before
	printf '#!/bin/sh\necho hello\n' >"$T/script"
	head -c 5000 /dev/urandom >"$T/data"
	mkdir "$T/dir"
	: >"$T/empty"
	for f in "$T/script" "$T/data" "$T/dir" "$T/empty"; do
		before=$(stat -c '%s %Y %a' "$f")
		[[ -d $f ]] || before+=" $(sha "$f")"
		# shellcheck disable=SC2016 # expanded by the inner sh
		run -0 --separate-stderr "$LOCKBOX" mutex "$f" sh -c \
			'flock -n "$1" true && echo free || echo locked; echo "slot=$LOCKBOX_SLOT"' sh "$f"
		assert_stderr ""
		assert_output "locked
slot=1"
		after=$(stat -c '%s %Y %a' "$f")
		[[ -d $f ]] || after+=" $(sha "$f")"
		assert_equal "$after" "$before"
	done
	# a missing file is made, as ever: a lockbox lock file
	run -0 "$LOCKBOX" mutex "$T/new.lock" true
	run -0 head -c 16 "$T/new.lock"
	assert_output "lockbox lock v1"
	# slots keeps its pools to lock files
	run -125 --separate-stderr "$LOCKBOX" slots "$T/data" 2 true
	assert_stderr "slots: $T/data: not a lockbox lock file; refusing to touch it (give the lock a path of its own: lockbox creates it)"
}

@test "any file: DIR/ and / are directories, locked as flock(1) locks them; a slash after a file or nothing is refused" {
	need_flock
	mkdir "$T/dir"
	local d
	for d in "$T/dir/" "$T/dir//" / //; do
		# shellcheck disable=SC2016 # expanded by the inner sh
		run -0 --separate-stderr "$LOCKBOX" mutex "$d" sh -c \
			'flock -n "$1" true && echo free || echo locked' sh "$d"
		assert_stderr ""
		assert_output "locked"
	done
	# flock(1)'s lock on / keeps mutex / out, and mutex DIR/ is mutex DIR
	hold_marked "$T/held" flock /
	run -75 --separate-stderr "$LOCKBOX" mutex / true
	assert_stderr_regex "^mutex: /: held by PID [0-9]+ \\((flock|sh), $AGE_RE\\)"
	stop_pid "$SPAWN_PID"
	hold_marked "$T/held2" "$LOCKBOX" mutex "$T/dir"
	run -75 --separate-stderr "$LOCKBOX" mutex -q "$T/dir/" true
	stop_pid "$SPAWN_PID"
	run -0 ls -A "$T/dir"
	assert_output ""
	# a slash names a directory: after a file, or nothing there, it is refused, and nothing is made
	: >"$T/file"
	run -125 --separate-stderr "$LOCKBOX" mutex "$T/file/" true
	assert_stderr "mutex: $T/file/: Not a directory"
	run -125 --separate-stderr "$LOCKBOX" mutex "$T/none/" true
	assert_stderr "mutex: $T/none/: no such directory $T/none; lockbox creates the lock file, not its directory"
	assert [ ! -e "$T/none" ]
	# slots keeps its pools to lock files
	run -125 --separate-stderr "$LOCKBOX" slots "$T/dir/" 2 true
	assert_stderr "slots: $T/dir/: not a regular file"
}

# bats test_tags=privilege
@test "any file: one the caller may only read is locked read-only, and a lockbox lock file so is still refused" {
	need_root_and_nobody
	need_flock
	local d
	d=$(world_readable_dir)
	printf 'config\n' >"$d/ro.conf"
	chmod 0644 "$d/ro.conf"
	# shellcheck disable=SC2016 # expanded by the inner sh
	run -0 --separate-stderr as_nobody "$LOCKBOX" mutex "$d/ro.conf" sh -c \
		'flock -n "$1" true; echo "$?"' sh "$d/ro.conf"
	assert_output 1
	assert_equal "$(cat "$d/ro.conf")" config
	# a lock file others may only read is not theirs to take
	run -0 "$LOCKBOX" mutex --mode 0644 "$d/x.lock" create
	run -125 --separate-stderr as_nobody "$LOCKBOX" mutex "$d/x.lock" true
	assert_stderr_regex "^mutex: $(re_quote "$d/x.lock"): Permission denied"
}

# bats test_tags=wait
@test "flock(1) holding, mutex refused at once naming it, then waiting and taking it as flock lets go" {
	need_flock
	printf 'data\n' >"$F"
	hold_marked "$T/flock.held" flock "$F"
	local holder=$SPAWN_PID
	run -75 --separate-stderr "$LOCKBOX" mutex "$F" touch "$T/ran"
	assert_stderr_regex "$(held_re mutex "$F" "$holder" flock)"
	run -0 "$LOCKBOX" mutex "$F" check
	assert_output 1
	run -0 "$LOCKBOX" mutex "$F" held
	run -0 "$LOCKBOX" mutex "$F" list
	assert_regex "${lines[1]}" "^- +$holder +$AGE_RE +flock\$"
	spawn "$LOCKBOX" mutex -w 60 "$F" touch "$T/ran"
	local waiter=$SPAWN_PID
	wait_for flock_waits "$F" 1
	run -0 "$LOCKBOX" mutex "$F" list
	assert_regex "${lines[2]}" "^- +$waiter +$AGE_RE +waiting 1st: touch\$"
	assert [ ! -e "$T/ran" ]
	stop_pid "$holder"
	stop_pid "$(cat "$T/flock.held")"
	reap "$waiter"
	assert_equal "$REAP_STATUS" 0
	assert [ -e "$T/ran" ]
	assert_equal "$(cat "$F")" data
}

# bats test_tags=wait
@test "mutex holding, flock -n refused, flock -w waiting and taking it as mutex's command ends" {
	need_flock
	printf 'data\n' >"$F"
	hold_marked "$T/held" "$LOCKBOX" mutex "$F"
	run -1 flock -n "$F" true
	run -1 flock -w 0.2 "$F" true
	spawn flock -w 60 "$F" touch "$T/ran"
	local waiter=$SPAWN_PID
	wait_for flock_waits "$F" 1
	assert [ ! -e "$T/ran" ]
	stop_pid "$(cat "$T/held")"
	reap "$waiter"
	assert_equal "$REAP_STATUS" 0
	assert [ -e "$T/ran" ]
	# and the other way with shared locks: flock -s and mutex -s together, not mutex
	hold_marked "$T/shared" flock -s "$F"
	run -0 "$LOCKBOX" mutex -s "$F" true
	run -75 --separate-stderr "$LOCKBOX" mutex "$F" true
	run -1 flock -n "$F" true
}

# bats test_tags=wait
@test "an empty file is never both: not adopted while locked with flock(2); a mutex that waited on it as any file takes a slot once it has become a lock file" {
	need_flock
	local a
	: >"$T/e"
	# held with flock(1) (flock(2) alone): slots and create leave it
	# empty, and the library's mutex is refused as by any holder
	hold_marked "$T/flock.held" flock "$T/e"
	a=$SPAWN_PID
	run -125 --separate-stderr "$LOCKBOX" slots "$T/e" 2 touch "$T/ran"
	assert_stderr "slots: $T/e: empty, and locked with flock(2) (by flock(1), or by mutex on a file it did not make); refusing to adopt it while it is"
	run -125 --separate-stderr "$LOCKBOX" mutex "$T/e" create
	# shellcheck disable=SC2016 # expanded by the child shell
	run -75 --separate-stderr bash -c '. "$("$LOCKBOX" --shell-lib)"; acquire_mutex "$1"' sh "$T/e"
	assert_stderr_regex "$(held_re mutex "$T/e" "$a" flock)"
	stop_pid "$a"
	stop_pid "$(cat "$T/flock.held")"
	# held by mutex (flock(2) and an fcntl read lock): a pool is refused
	# as by any holder, 75, naming it; the file stays empty
	# shellcheck disable=SC2016 # expanded by the child shell
	"$LOCKBOX" mutex "$T/e" sh -c 'touch "$1"; exec sleep 600' sh "$T/held" &
	a=$!
	track_pid "$a"
	wait_for test -e "$T/held"
	run -75 --separate-stderr "$LOCKBOX" slots "$T/e" 2 touch "$T/ran"
	# (named when the refusal's bounded look finds the process in time)
	assert_stderr_regex "$(locked_re slots "$T/e" "$a" sleep)"
	run -125 --separate-stderr "$LOCKBOX" mutex "$T/e" create
	# shellcheck disable=SC2016 # expanded by the child shell
	run -75 --separate-stderr bash -c '. "$("$LOCKBOX" --shell-lib)"; acquire_mutex "$1"' sh "$T/e"
	assert [ ! -e "$T/ran" ]
	assert_equal "$(stat -c %s "$T/e")" 0
	stop_pid "$a"
	# the header goes in under flock(2), while a mutex waits for that
	# lock as for any file's: it then finds a lockbox lock file, and
	# takes its slot the way that file's holders do
	rm -f "$T/held"
	"$LOCKBOX" mutex "$T/header" create
	head -c 4096 "$T/header" >"$T/hdr"
	mkfifo "$T/go"
	# shellcheck disable=SC2016 # expanded by the child shell
	flock "$T/e" sh -c 'touch "$1"; read -r _ <"$2"; cat "$3" >"$4"' \
		sh "$T/writing" "$T/go" "$T/hdr" "$T/e" &
	track_pid "$!"
	wait_for test -e "$T/writing"
	# shellcheck disable=SC2016 # expanded by the child shell
	"$LOCKBOX" mutex -w 30 "$T/e" sh -c 'touch "$1"; exec sleep 600' sh "$T/held" &
	a=$!
	track_pid "$a"
	wait_for flock_waits "$T/e" 1
	echo go >"$T/go"
	wait_for test -e "$T/held"
	run -0 "$LOCKBOX" mutex "$T/e" check
	assert_output 1
	run -75 --separate-stderr "$LOCKBOX" mutex "$T/e" touch "$T/ran"
	# shellcheck disable=SC2154 # set by run --separate-stderr
	assert_regex "$stderr" "held by PID $a "
	assert [ ! -e "$T/ran" ]
}

# bats test_tags=privilege
@test "held: 0 while held, 1 when free or missing, for if; no output" {
	run -1 --separate-stderr "$LOCKBOX" mutex "$F" held
	assert_output ""
	assert_stderr ""
	run -0 "$LOCKBOX" mutex "$F" create
	run -1 "$LOCKBOX" mutex "$F" held
	hold_marked "$T/held" "$LOCKBOX" mutex "$F"
	run -0 --separate-stderr "$LOCKBOX" mutex "$F" held
	assert_output ""
	# shellcheck disable=SC2016 # expanded by the inner sh
	run -0 sh -c 'if "$1" mutex "$2" held; then echo running; else echo idle; fi' sh "$LOCKBOX" "$F"
	assert_output running
	run -0 "$LOCKBOX" slots "$F" held
	run -125 --separate-stderr "$LOCKBOX" mutex --json "$F" held
	assert_stderr "mutex: --json goes with check or list; held says it with its status
Try 'lockbox mutex --help'."
	stop_pid "$(cat "$T/held")"
	# shellcheck disable=SC2016 # expanded by eval
	wait_for eval '! "$LOCKBOX" mutex "$F" held'
	run -1 "$LOCKBOX" mutex "$F" held
	# a command named held goes after --
	mkdir "$T/bin"
	printf '#!/bin/sh\necho ran held\n' >"$T/bin/held"
	chmod +x "$T/bin/held"
	PATH=$T/bin:$PATH run -0 "$LOCKBOX" mutex "$F" -- held
	assert_output "ran held"
}

# bats test_tags=wait
@test "flock(1)'s spellings: -n -x -e --nb --nonblock -F, -w inf and --timeout, -c and --command" {
	local opt
	for opt in -n -x -e --nb --nonblock --nonblocking --exclusive -F --no-fork; do
		run -0 --separate-stderr "$LOCKBOX" mutex "$opt" "$F" sh -c "$SHOW_SLOT"
		assert_output 1
	done
	run -0 "$LOCKBOX" mutex -w inf "$F" true
	run -0 "$LOCKBOX" mutex --timeout 1.5 "$F" true
	run -0 "$LOCKBOX" mutex --timeout=inf "$F" true
	# shellcheck disable=SC2016 # expanded by the shell -c runs
	run -0 --separate-stderr "$LOCKBOX" mutex "$F" -c 'echo "one $LOCKBOX_SLOT"; echo two'
	assert_output "one 1
two"
	# shellcheck disable=SC2016 # expanded by the shell --command runs
	SHELL=/bin/sh run -0 "$LOCKBOX" mutex "$F" --command 'echo "$0"'
	assert_output /bin/sh
	run -125 --separate-stderr "$LOCKBOX" mutex "$F" -c
	assert_stderr "mutex: -c takes exactly one argument, the command for the shell
Try 'lockbox mutex --help'."
	run -125 --separate-stderr "$LOCKBOX" mutex "$F" -c 'echo' extra
	assert_stderr "mutex: -c takes exactly one argument, the command for the shell
Try 'lockbox mutex --help'."
	run -125 --separate-stderr "$LOCKBOX" mutex -w forever "$F" true
	assert_stderr_regex "^mutex: invalid duration 'forever': "
	# -n after -w: no wait (the last counts, as in flock(1))
	hold_marked "$T/held" "$LOCKBOX" mutex "$F"
	run -75 --separate-stderr within 10 "$LOCKBOX" mutex -w 60 -n "$F" true
	run -5 --separate-stderr "$LOCKBOX" mutex -E 5 --nb "$F" true
}

# bats test_tags=wait
@test "-w inf waits until the lock is free" {
	hold_marked "$T/held" "$LOCKBOX" mutex "$F"
	spawn "$LOCKBOX" mutex -w inf "$F" touch "$T/ran"
	local waiter=$SPAWN_PID
	need_lockhold
	wait_for waiting_on "$F" 1
	assert [ ! -e "$T/ran" ]
	stop_pid "$(cat "$T/held")"
	reap "$waiter"
	assert_equal "$REAP_STATUS" 0
	assert [ -e "$T/ran" ]
}

# lock_fds PID FILE: how many of PID's descriptors are open on FILE.
lock_fds() {
	local fd n=0 ino
	ino=$(stat -c %i "$2")
	for fd in /proc/"$1"/fd/*; do
		[[ $(stat -L -c %i "$fd" 2>/dev/null) == "$ino" ]] && n=$((n + 1))
	done
	printf '%s\n' "$n"
}

@test "-o: the command does not inherit the lock; mutex holds it until the command ends, with its status" {
	need_flock
	printf 'data\n' >"$T/data"
	local f n=0 cmd
	for f in "$F" "$T/data"; do
		n=$((n + 1))
		spawn "$LOCKBOX" mutex "$f" sh -c "$MARK_AND_HOLD" sh "$T/in.$n"
		wait_for test -s "$T/in.$n"
		cmd=$(cat "$T/in.$n")
		assert_equal "$(lock_fds "$cmd" "$f")" 1
		stop_pid "$cmd"
		spawn "$LOCKBOX" mutex -o "$f" sh -c "$MARK_AND_HOLD" sh "$T/out.$n"
		local parent=$SPAWN_PID
		wait_for test -s "$T/out.$n"
		cmd=$(cat "$T/out.$n")
		track_pid "$cmd"
		assert_equal "$(lock_fds "$cmd" "$f")" 0
		run -0 "$LOCKBOX" mutex "$f" check
		assert_output 1
		run -0 "$LOCKBOX" mutex "$f" list
		assert_regex "${lines[1]}" "^[-1] +$parent +$AGE_RE +"
		kill "$cmd"
		reap "$parent"
		assert_equal "$REAP_STATUS" 143
		run -0 "$LOCKBOX" mutex "$f" check
		assert_output 0
		run -7 "$LOCKBOX" mutex --close "$f" sh -c 'exit 7'
	done
	run -1 "$LOCKBOX" mutex -o "$T/data" flock -n "$T/data" true
	run -127 --separate-stderr "$LOCKBOX" mutex -o "$F" "$T/nonesuch"
	assert_stderr "mutex: cannot run '$T/nonesuch': No such file or directory"
	run -125 --separate-stderr "$LOCKBOX" mutex -o -F "$F" true
	assert_stderr "mutex: -o and -F do not go together
Try 'lockbox mutex --help'."
	run -125 --separate-stderr "$LOCKBOX" mutex -o "$F" check
	assert_stderr "mutex: -o and -F go with COMMAND
Try 'lockbox mutex --help'."
}

@test "-o: a signal sent to mutex is passed to the command, and its end is mutex's" {
	# shellcheck disable=SC2016 # expanded by the inner sh
	spawn_watched "$LOCKBOX" mutex -o "$F" sh -c 'trap "exit 42" TERM; echo "$$" >"$1.tmp"; mv "$1.tmp" "$1"; while :; do sleep 0.05; done' sh "$T/child"
	wait_for test -s "$T/child"
	track_pid "$(cat "$T/child")"
	run -0 "$LOCKBOX" mutex "$F" check
	assert_output 1
	kill -TERM "$WATCHED_PID"
	# shellcheck disable=SC2016 # expanded by eval
	wait_for eval 'grep -q "^exit" "$SPAWN_OUT"'
	assert_equal "$(tail -n 1 "$SPAWN_OUT")" "exit 42"
	run -0 "$LOCKBOX" mutex "$F" check
	assert_output 0
}

@test "flock FD and flock -u FD: any file on an fd open in any way, nothing on stdout" {
	need_flock
	need_ofd
	: >"$T/plain"
	cat >"$T/script" <<'EOF'
exec 9>"$1"
"$LOCKBOX" mutex -n 9 || exit 3
flock -n "$1" true && echo "flock got it" || echo "flock refused"
"$LOCKBOX" mutex -u 9
flock -n "$1" true && echo "flock got it" || echo "flock refused"
"$LOCKBOX" mutex -s 9
flock -s -n "$1" true && echo "flock -s got it" || echo "flock -s refused"
flock -n "$1" true && echo "flock got it" || echo "flock refused"
exec 9>&-
flock -n "$1" true && echo "flock got it" || echo "flock refused"
EOF
	run -0 --separate-stderr bash "$T/script" "$T/plain"
	assert_stderr ""
	assert_output "flock refused
flock got it
flock -s got it
flock refused
flock got it"
	# held by another open file: 75, or -E's
	hold_marked "$T/held" flock "$T/plain"
	# shellcheck disable=SC2016 # expanded by the inner bash
	run -75 --separate-stderr bash -c 'exec 9<"$2"; "$1" mutex 9' sh "$LOCKBOX" "$T/plain"
	assert_stderr_regex "$(held_re mutex "$T/plain" "[0-9]+" flock)"
	# shellcheck disable=SC2016 # expanded by the inner bash
	run -123 --separate-stderr bash -c 'exec 9<"$2"; "$1" mutex -q -E 123 9' sh "$LOCKBOX" "$T/plain"
	assert_stderr ""
	# a lockbox lock file's slot on an fd: 9<> as acquire --fd takes it, 9> refused
	run -0 "$LOCKBOX" mutex "$F" create
	# shellcheck disable=SC2016 # expanded by the inner bash
	run -0 --separate-stderr bash -c 'exec 9<>"$2"; "$1" mutex 9 && "$1" mutex "$2" check && "$1" mutex -u 9 && "$1" mutex "$2" check' \
		sh "$LOCKBOX" "$F"
	assert_output "1
0"
	# shellcheck disable=SC2016 # expanded by the inner bash
	run -125 --separate-stderr bash -c 'exec 9>>"$2"; "$1" mutex 9' sh "$LOCKBOX" "$F"
	assert_stderr "mutex: $F: fd 9 is not open for reading and writing; open it with 9<>FILE"
	run -125 --separate-stderr "$LOCKBOX" mutex -u "$F" true
	assert_stderr "mutex: -u goes with a file descriptor: mutex -u FD
Try 'lockbox mutex --help'."
}

@test "flock(1)'s FD form: the shell that opened the descriptor keeps the lock, and the busy message and list say so, not that children keep it" {
	need_ofd	# a classic POSIX lock would die with mutex
	local sh
	printf 'data\n' >"$T/data"
	# shellcheck disable=SC2016 # expanded by the inner bash
	spawn bash -c 'exec 9<"$1"; "$2" mutex 9 || exit; echo "$$" >"$3.tmp"; mv "$3.tmp" "$3"; while :; do sleep 1 9<&-; done' \
		sh "$T/data" "$LOCKBOX" "$T/shell"
	wait_for test -s "$T/shell"
	sh=$(cat "$T/shell")
	run -75 --separate-stderr "$LOCKBOX" mutex "$T/data" true
	# the keeper named when the refusal's bounded look finds it in time
	assert_stderr_regex "^mutex: $(re_quote "$T/data"): held by (PID [0-9]+ \\(\\?\\), which has exited: (PID $sh \\(bash\\), which shares its open file,|a process that shares its open file) keeps the lock|another program; 'lockbox locks $(re_quote "$T/data")' shows who)\$"
	run -0 "$LOCKBOX" mutex "$T/data" list
	assert_regex "${lines[1]}" "^- +[0-9]+ +\\? +exited, kept by PID $sh \\(bash\\)\$"
	stop_pid "$sh"
}

@test "a holder that exited while its children keep the lock is named so, in a lock file and any file" {
	need_ofd	# a classic POSIX lock is not inherited: the child would not hold it
	local f child
	printf 'data\n' >"$T/data"
	for f in "$F" "$T/data"; do
		# shellcheck disable=SC2016 # expanded by the child shell
		run -0 "$LOCKBOX" mutex "$f" sh -c 'sleep 600 >/dev/null 2>&1 & echo "$!" >"$1"; echo "$$"' sh "$T/child"
		local gone=$output
		child=$(cat "$T/child")
		track_pid "$child"
		run -75 --separate-stderr "$LOCKBOX" mutex "$f" true
		# the child that keeps it is named when a refusal's bounded look at
		# the processes finds it in time (on a host of hundreds of busy
		# processes it may not: list, below, looks without that bound)
		if [[ $f == "$F" ]]; then
			assert_stderr_regex "^mutex: $(re_quote "$f"): held by PID $gone \\(sh, $AGE_RE\\), which has exited: (PID $child \\(sleep\\), which shares its open file,|a process that shares its open file) keeps the lock\$"
		else
			assert_stderr_regex "^mutex: $(re_quote "$f"): held by (PID $gone \\(\\?\\), which has exited: (PID $child \\(sleep\\), which shares its open file,|a process that shares its open file) keeps the lock|another program; 'lockbox locks $(re_quote "$f")' shows who)\$"
		fi
		run -0 "$LOCKBOX" mutex "$f" list
		# the keeper by its name; the holder's command after a colon when
		# its record names it (an any-file holder has none: no colon)
		if [[ $f == "$F" ]]; then
			assert_regex "${lines[1]}" "^1 +$gone +[^ ]+ +exited, kept by PID $child \\(sleep\\): sh\$"
		else
			assert_regex "${lines[1]}" "^- +$gone +[^ ]+ +exited, kept by PID $child \\(sleep\\)\$"
		fi
		run -0 "$LOCKBOX" mutex --json "$f" list
		assert_regex "$output" "\"exited\":true,\"kept_by\":$child\\}\\]\$"
		stop_pid "$child"
		run -0 "$LOCKBOX" mutex "$f" check
		assert_output 0
	done
}

# --- shared locks --------------------------------------------------------------

@test "-s: shared holders together, each in a slot of its own, listed as shared; an exclusive one kept out" {
	local pids=() i
	for i in 1 2 3; do
		spawn "$LOCKBOX" mutex -s "$F" sh -c "$MARK_AND_HOLD" sh "$T/reader.$i"
		pids+=("$SPAWN_PID")
		wait_for test -s "$T/reader.$i"
	done
	run -0 "$LOCKBOX" mutex "$F" check
	assert_output 3
	run -0 "$LOCKBOX" mutex "$F" list
	assert_equal "${#lines[@]}" 4
	for i in 1 2 3; do
		assert_regex "${lines[i]}" "^$i +${pids[i - 1]} +$AGE_RE +shared: sh\$"
	done
	run -0 "$LOCKBOX" mutex --json "$F" list
	valid_json <<<"$output"
	assert_regex "$output" "^\\[\\{\"slot\":1,\"pid\":${pids[0]},.*,\"command\":\"sh\",\"mode\":\"shared\"\\},"
	run -75 --separate-stderr "$LOCKBOX" mutex "$F" true
	assert_stderr "mutex: $F: held (PIDs ${pids[0]}, ${pids[1]}, ${pids[2]})"
	run -75 --separate-stderr "$LOCKBOX" slots "$F" 3 true
	assert_stderr_regex "^slots: $(re_quote "$F"): all 3 slots busy: PID ${pids[0]} \\(sh, $AGE_RE, shared\\), PID ${pids[1]} \\(sh, $AGE_RE, shared\\), PID ${pids[2]} \\(sh, $AGE_RE, shared\\)\$"
	# shellcheck disable=SC2016 # expanded by the child shell
	run -0 "$LOCKBOX" slots "$F" 4 sh -c 'echo "$LOCKBOX_SLOT"'
	assert_output 4
	stop_pid "${pids[1]}"
	run -0 "$LOCKBOX" mutex "$F" check
	assert_output 2
	# shellcheck disable=SC2016 # expanded by the child shell
	run -0 "$LOCKBOX" mutex --shared "$F" sh -c 'echo "$LOCKBOX_SLOT"'
	assert_output 2
}

@test "-s: kept out by an exclusive holder or a slots holder; slots takes no -s" {
	spawn "$LOCKBOX" mutex "$F" sh -c "$MARK_AND_HOLD" sh "$T/writer"
	local writer=$SPAWN_PID
	wait_for test -s "$T/writer"
	run -75 --separate-stderr "$LOCKBOX" mutex -s "$F" true
	assert_stderr_regex "^mutex: $(re_quote "$F"): held by PID $writer \\(sh, $AGE_RE\\)\$"
	stop_pid "$writer"
	hold_marked "$T/slot" "$LOCKBOX" slots "$F" 3
	run -75 --separate-stderr "$LOCKBOX" mutex -s "$F" true
	run -125 --separate-stderr "$LOCKBOX" slots -s "$F" 3 true
	assert_stderr "slots: -s goes with mutex: a slot is never shared (see slots(1))
Try 'lockbox slots --help'."
	run -125 --separate-stderr "$LOCKBOX" mutex -s "$F" list
	assert_stderr "mutex: -s goes with COMMAND or acquire
Try 'lockbox mutex --help'."
	# a server's advisory locks are each for one holder: refused before any connection
	run -125 --separate-stderr "$LOCKBOX" mutex -s 'postgresql://127.0.0.1:1/db?lock=x' true
	assert_stderr "mutex: postgresql://127.0.0.1:1/db?lock=x: a shared lock needs a lock file; a server's locks are each for one holder"
}

@test "-s: a shared holder killed with SIGKILL leaves its share, and the lock frees with the last one" {
	local a b
	spawn "$LOCKBOX" mutex -s "$F" sh -c "$MARK_AND_HOLD" sh "$T/a"
	a=$SPAWN_PID
	spawn "$LOCKBOX" mutex -s "$F" sh -c "$MARK_AND_HOLD" sh "$T/b"
	b=$SPAWN_PID
	wait_for test -s "$T/a"
	wait_for test -s "$T/b"
	kill -KILL "$a"
	wait_for held_is "$F" 1
	run -75 "$LOCKBOX" mutex "$F" true
	kill -KILL "$b"
	wait_for held_is "$F" 0
	run -0 "$LOCKBOX" mutex "$F" true
}

# bats test_tags=wait
@test "-s: writer starvation: a queued exclusive request is never overtaken by later shared ones" {
	local readers=() r i late
	for i in 1 2 3; do
		spawn "$LOCKBOX" mutex -s "$F" sh -c "$MARK_AND_HOLD" sh "$T/reader.$i"
		readers+=("$SPAWN_PID")
		wait_for test -s "$T/reader.$i"
	done
	# shellcheck disable=SC2016 # expanded by the child shell
	spawn "$LOCKBOX" mutex -w 60 "$F" sh -c 'echo writer >>"$1"' sh "$T/order"
	local writer=$SPAWN_PID
	wait_for waiting_on "$F" 1
	# later shared requests: one that does not wait is refused, those that wait go behind
	run -75 --separate-stderr "$LOCKBOX" mutex -s "$F" true
	assert_stderr "mutex: $F: another request waits in the queue, and a shared one does not go past it"
	for i in 1 2; do
		# shellcheck disable=SC2016 # expanded by the child shell
		spawn "$LOCKBOX" mutex -s -w 60 "$F" sh -c 'echo "late $1" >>"$2"' sh "$i" "$T/order"
		late+=("$SPAWN_PID")
		wait_for waiting_on "$F" $((i + 1))
	done
	# (a waiter's mark at a page's edge of the kernel's table may be missed
	# once on a busy host: list is read until it shows the three)
	wait_for lists_waiter "$F" "$writer"
	wait_for lists_waiter "$F" "${late[1]}"
	run -0 "$LOCKBOX" mutex "$F" list
	assert_regex "${lines[4]}" "^- +$writer +$AGE_RE +waiting 1st: sh\$"
	assert_regex "${lines[5]}" "^- +${late[0]} +$AGE_RE +waiting 2nd, shared: sh\$"
	assert_regex "${lines[6]}" "^- +${late[1]} +$AGE_RE +waiting 3rd, shared: sh\$"
	# the readers ahead go, one after the other: the writer first, then the late ones
	for r in "${readers[@]}"; do
		assert [ ! -e "$T/order" ]
		stop_pid "$r"
	done
	reap "$writer"
	assert_equal "$REAP_STATUS" 0
	for r in "${late[@]}"; do
		reap "$r"
		assert_equal "$REAP_STATUS" 0
	done
	assert_equal "$(head -n 1 "$T/order")" writer
	assert_equal "$(wc -l <"$T/order")" 3
}

@test "-s with acquire --fd from bash: shared holders are the shells, listed so" {
	need_ofd
	cat >"$T/script" <<'EOF'
exec {a}<>"$1" {b}<>"$1"
"$LOCKBOX" mutex acquire -s --fd "$a" >/dev/null || exit
"$LOCKBOX" mutex acquire --shared --fd "$b" >/dev/null || exit
"$LOCKBOX" mutex "$1" check
"$LOCKBOX" mutex "$1" list
"$LOCKBOX" mutex -q "$1" true || echo "exclusive refused: $?"
"$LOCKBOX" mutex release --fd "$a"
"$LOCKBOX" mutex release --fd "$b"
"$LOCKBOX" mutex "$1" check
EOF
	run -0 --separate-stderr bash "$T/script" "$F"
	assert_stderr ""
	assert_equal "${lines[0]}" 2
	assert_regex "${lines[2]}" "^1 +[0-9]+ +$AGE_RE +shared: script\$"
	assert_regex "${lines[3]}" "^2 +[0-9]+ +$AGE_RE +shared: script\$"
	assert_equal "${lines[4]}" "exclusive refused: 75"
	assert_equal "${lines[5]}" 0
}

# --- waiters in list ----------------------------------------------------------

# stopped PID: the process is stopped (state T in /proc/PID/stat).
stopped() {
	[[ $(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) == T ]]
}

# bats test_tags=wait
@test "list shows the -w waiters in queue order, with PID, time waited and whether stopped; check counts holders only" {
	hold_marked "$T/held" "$LOCKBOX" mutex "$F"
	local holder=$SPAWN_PID w=() i
	for i in 1 2 3; do
		spawn "$LOCKBOX" mutex -w 60 "$F" true
		w+=("$SPAWN_PID")
		wait_for waiting_on "$F" "$i"
	done
	kill -STOP "${w[1]}"
	wait_for stopped "${w[1]}"
	run -0 "$LOCKBOX" mutex "$F" check
	assert_output 1
	run -0 --separate-stderr "$LOCKBOX" mutex "$F" list
	assert_equal "${#lines[@]}" 5
	assert_regex "${lines[1]}" "^1 +$holder +$AGE_RE +sh\$"
	assert_regex "${lines[2]}" "^- +${w[0]} +$AGE_RE +waiting 1st: true\$"
	assert_regex "${lines[3]}" "^- +${w[1]} +$AGE_RE +waiting 2nd, stopped: true\$"
	assert_regex "${lines[4]}" "^- +${w[2]} +$AGE_RE +waiting 3rd: true\$"
	run -0 --separate-stderr "$LOCKBOX" mutex --json "$F" list
	valid_json <<<"$output"
	assert_regex "$output" ",\\{\"slot\":null,\"waiting\":true,\"queue\":1,\"pid\":${w[0]},\"waited_seconds\":[0-9.]+,\"stopped\":false,\"command\":\"true\",\"mode\":\"exclusive\"\\},\\{\"slot\":null,\"waiting\":true,\"queue\":2,\"pid\":${w[1]},\"waited_seconds\":[0-9.]+,\"stopped\":true,"
	kill -CONT "${w[1]}"
}

# --- -v on a terminal ---------------------------------------------------------

# on_pty CMD...: run CMD with a pseudo-terminal of 400 columns as its
# stdin, stdout and stderr (script(1) of util-linux), all it wrote in
# $T/pty.out (between script's own first and last lines).
on_pty() {
	command -v script >/dev/null || skip "needs script(1) (util-linux)"
	local q
	printf -v q '%q ' "$@"
	script -qfec "stty cols 400 rows 25 2>/dev/null; exec $q" "$T/pty.out" >/dev/null </dev/null
}

# bats test_tags=wait
@test "-v on a terminal: one status line rewritten while waiting, cleared before the last message; none off a terminal" {
	hold_marked "$T/held" "$LOCKBOX" mutex "$F"
	local holder=$SPAWN_PID
	spawn "$LOCKBOX" mutex -w 60 "$F" true
	local ahead=$SPAWN_PID
	wait_for waiting_on "$F" 1
	# the holder goes once the status line has been rewritten at least twice
	# shellcheck disable=SC2016 # expanded by the inner sh
	spawn sh -c 'while [ "$(grep -o "waiting" "$1" 2>/dev/null | wc -l)" -lt 3 ]; do sleep 0.05; done; kill "$2"' \
		sh "$T/pty.out" "$(cat "$T/held")"
	on_pty "$LOCKBOX" mutex -v -w 60 "$F" echo ran
	reap "$ahead"
	run -0 cat -v "$T/pty.out"
	# each rewrite: a carriage return, the line, the rest of the old one erased
	assert_regex "$output" "\\^Mmutex: $(re_quote "$F"): waiting [0-9.]+m?s, 2nd in the queue\\^\\[\\[K"
	assert_regex "$output" "\\^Mmutex: $(re_quote "$F"): waiting [0-9.]+m?s, (2nd in the queue|next in line, held by PID $holder \\(sh, $AGE_RE\\))\\^\\[\\[K"
	assert_regex "$output" "\\^M\\^\\[\\[Kmutex: $(re_quote "$F"): took slot 1 of 1\\^M"
	assert_line "ran^M"
	# off a terminal: the last line only
	hold_marked "$T/held2" "$LOCKBOX" mutex "$F"
	spawn "$LOCKBOX" mutex -v -w 60 "$F" true
	local waiter=$SPAWN_PID err=$SPAWN_ERR
	wait_for waiting_on "$F" 1
	stop_pid "$(cat "$T/held2")"
	reap "$waiter"
	assert_equal "$(cat "$err")" "mutex: $F: took slot 1 of 1"
}

# bats test_tags=wait
@test "-v on a terminal, any file: the status line names the flock(1) holder" {
	need_flock
	printf 'data\n' >"$T/data"
	hold_marked "$T/held" flock "$T/data"
	local holder=$SPAWN_PID
	# shellcheck disable=SC2016 # expanded by the inner sh
	# (the holder is named when the look of a few milliseconds finds its
	# process, each time the line is rewritten: let go after two names,
	# or after a few lines on a host too busy for the look)
	spawn sh -c 'while [ "$(grep -o "held by" "$1" 2>/dev/null | wc -l)" -lt 2 ] &&
		[ "$(grep -o "waiting" "$1" 2>/dev/null | wc -l)" -lt 6 ]; do sleep 0.05; done; kill "$2" "$3"' \
		sh "$T/pty.out" "$(cat "$T/held")" "$holder"
	on_pty "$LOCKBOX" mutex -v -w 60 "$T/data" echo ran
	run -0 cat -v "$T/pty.out"
	# (a place among flock(2)'s waiters is the kernel's to know: not said)
	assert_regex "$output" "\\^Mmutex: $(re_quote "$T/data"): waiting [0-9.]+m?s(, held by PID $holder \\(flock, $AGE_RE\\))?\\^\\[\\[K"
	assert_regex "$output" "took slot 1 of 1"
	# a holder named is the flock(1) holder
	run -1 grep -E "held by" <<<"${output//, held by PID $holder (flock, /}"
}

# --- util-linux's tests/ts/flock, replayed with mutex and flock(1)'s spellings ---
# Their "flock" script runs each case against a general shared lock held
# for 3 s (sleep 3) and times the wait; here the holder is held until the
# test lets it go, and the waits are checked by order, not by the clock.
# Each case runs twice: on a plain file, locked with flock(2) as flock(1)
# locks it ("flock" api), and on a lockbox lock file, locked with fcntl(2)
# byte-range locks (their "fcntl" api is flock --fcntl).

# ts_lockfile API: the lock file of the replay, made as that api has it.
ts_lockfile() {
	TS_LOCK=$T/lockfile.$1
	if [[ $1 == fcntl ]]; then
		"$LOCKBOX" mutex "$TS_LOCK" create
	else
		: >"$TS_LOCK"
	fi
}

# ts_general API: the general lock: a shared holder that prints as theirs does.
ts_general() {
	ts_lockfile "$1"
	# shellcheck disable=SC2016 # expanded by the inner bash
	spawn "$LOCKBOX" mutex --shared "$TS_LOCK" bash -c \
		'echo "API: $1"; echo Locking; echo "$$" >"$2.tmp"; mv "$2.tmp" "$2"; exec sleep 600' \
		sh "$1" "$T/general.$1"
	TS_OUT=$SPAWN_OUT
	wait_for test -s "$T/general.$1"
}

@test "util-linux flock: non-block, no-fork, shared, exclusive, fd, timeout and time-check, on both apis" {
	local api
	for api in flock fcntl; do
		ts_general "$api"
		# non-block
		run -123 --separate-stderr "$LOCKBOX" mutex --nonblocking --conflict-exit-code 123 "$TS_LOCK" echo "You will never see this!"
		assert_output ""
		# no-fork
		run -123 --separate-stderr "$LOCKBOX" mutex --no-fork --nonblocking --conflict-exit-code 123 "$TS_LOCK" echo "You will never see this!"
		assert_output ""
		# shared
		run -0 --separate-stderr "$LOCKBOX" mutex --shared "$TS_LOCK" echo "Have shared lock"
		assert_output "Have shared lock"
		# exclusive
		run -123 --separate-stderr "$LOCKBOX" mutex --nb --exclusive --conflict-exit-code 123 "$TS_LOCK" echo "You will never see this!"
		# fd: a number alone is a descriptor, never a file named so (a lock
		# file's slot on an fd needs open file description locks)
		local st=123
		[[ $api == flock ]] || ofd_build || st=125
		# shellcheck disable=SC2016 # expanded by the inner bash
		run "-$st" --separate-stderr bash -c 'cd "$3" && exec 4<>"$2" && "$1" mutex --nonblocking --exclusive --conflict-exit-code 123 4' \
			sh "$LOCKBOX" "$TS_LOCK" "$T"
		assert [ ! -e "$T/4" ]
		# timeout, and time-check: it waits for the general lock, and gets it
		# as that goes (5 s there; here 5 s or 5,000 paces, for a loaded
		# host and an instrumented build)
		spawn "$LOCKBOX" mutex --timeout "$(paces_or 5000 5)" --conflict-exit-code 5 "$TS_LOCK" echo "After timeout."
		local waiter=$SPAWN_PID out=$SPAWN_OUT
		if [[ $api == fcntl ]]; then
			wait_for waiting_on "$TS_LOCK" 1
		else
			wait_for flock_waits "$TS_LOCK" 1
		fi
		assert [ ! -s "$out" ]
		stop_pid "$(cat "$T/general.$api")"
		reap "$waiter"
		assert_equal "$REAP_STATUS" 0
		assert_equal "$(cat "$out")" "After timeout."
		assert_equal "$(cat "$TS_OUT")" "API: $api
Locking"
	done
}

@test "util-linux flock: fcntl-vs-flock: the two kinds are independent in the kernel, so mutex holds both, on any file" {
	need_flock
	ts_general fcntl
	# a lockbox lock file: its holders' fcntl locks come with a flock(2)
	# lock (shared here), unlike flock --fcntl's (on purpose: one lock a path)
	run -1 --separate-stderr flock --nonblock --exclusive "$TS_LOCK" echo "You will never see this!"
	run -0 --separate-stderr flock --nonblock --shared "$TS_LOCK" echo "flock -s with mutex -s"
	assert_output "flock -s with mutex -s"
	# a plain file: mutex and flock(1) take the same flock(2) lock
	ts_general flock
	run -1 --separate-stderr flock --nonblock --exclusive "$TS_LOCK" echo "You will never see this!"
	run -0 --separate-stderr flock --nonblock --shared "$TS_LOCK" echo "flock -s with mutex -s"
	assert_output "flock -s with mutex -s"
}

# bats test_tags=privilege
@test "util-linux flock: close: --fd FD COMMAND runs COMMAND holding FD's lock; with -o COMMAND does not have FD" {
	need_flock
	ts_lockfile flock
	# theirs, word for word: with --close the command gets no fd 10 (EBADF); without, it locks it again
	# shellcheck disable=SC2016 # expanded by the inner bash
	run -0 --separate-stderr bash -c '
		exec 10<>"$2"
		"$1" mutex --exclusive --close --fd 10 --command "\"$1\" mutex --exclusive --nonblock --fd 10 true"
		echo "exit code: $?"
		"$1" mutex --exclusive --fd 10 --command "\"$1\" mutex --exclusive --nonblock --fd 10 true"
		echo "exit code: $?"' sh "$LOCKBOX" "$TS_LOCK"
	assert_output "exit code: 125
exit code: 0"
	assert_stderr "mutex: fd 10: Bad file descriptor"
	# COMMAND and its words, -c and --, under the lock: flock(1) on the file is kept out
	# shellcheck disable=SC2016 # expanded by the inner bash
	run -0 --separate-stderr bash -c '
		exec 10<>"$2"
		"$1" mutex --fd 10 sh -c "flock -n \"\$0\" true || echo \"held \$LOCKBOX_SLOT\"" "$2"
		"$1" mutex -o --fd 10 -c "flock -n \"$2\" true || echo held"
		"$1" mutex --fd 10 -- sh -c "echo \$0" words
		exec 10>&-
		flock -n "$2" true && echo free' sh "$LOCKBOX" "$TS_LOCK"
	assert_output "held 1
held
words
free"
	assert_stderr ""
	# a pool's slot on an fd goes by acquire; --fd alone names no command
	run -125 --separate-stderr "$LOCKBOX" mutex --fd 0
	assert_stderr "mutex: missing COMMAND
Try 'lockbox mutex --help'."
	run -125 --separate-stderr "$LOCKBOX" mutex --mode 0644 --fd 0 true
	assert_stderr "mutex: --mode goes with a LOCKFILE: the caller made FD's file
Try 'lockbox mutex --help'."
}

# bats test_tags=wait
@test "util-linux flock: unlock: lock and unlock a descriptor, then -w 0 is -n; --verbose prints flock(1)'s lines on stdout" {
	need_flock
	ts_lockfile flock
	# shellcheck disable=SC2016 # expanded by the inner bash
	run -0 --separate-stderr bash -c '
		exec 10<>"$2"
		"$1" mutex --exclusive --nonblock --verbose 10
		flock --nonblock "$2" true && echo "taken by flock: not locked" || echo locked
		"$1" mutex --unlock 10
		"$1" mutex --exclusive --wait 0 --verbose "$2" true' sh "$LOCKBOX" "$TS_LOCK"
	assert_line --index 0 --regexp '^mutex: getting lock took [0-9]+\.[0-9]{6} seconds$'
	assert_line --index 1 locked
	assert_line --index 2 --regexp '^mutex: getting lock took [0-9]+\.[0-9]{6} seconds$'
	assert_line --index 3 "mutex: executing true"
	assert_equal "${#lines[@]}" 4
	assert_stderr ""
	# -v is lockbox's own, on stderr; slots --verbose is -v; acquire's stdout stays the slot's number
	run -0 --separate-stderr "$LOCKBOX" mutex -v "$T/v.lock" true
	assert_output ""
	assert_stderr "mutex: $T/v.lock: took slot 1 of 1"
	run -0 --separate-stderr "$LOCKBOX" slots --verbose "$T/s.lock" 2 true
	assert_output ""
	assert_stderr "slots: $T/s.lock: took slot 1 of 2"
	# (acquire --fd locks the caller's descriptor: open file description locks)
	ofd_build || return 0
	# shellcheck disable=SC2016 # expanded by the inner bash
	run -0 --separate-stderr bash -c 'exec 9<>"$2"; "$1" mutex acquire --verbose --fd 9' sh "$LOCKBOX" "$T/a.lock"
	assert_output 1
	assert_stderr "mutex: $T/a.lock: took slot 1 of 1"
}

@test "the library's acquire_mutex -s: shared locks held by shells, an exclusive one refused, acquire_slot -s refused" {
	need_ofd	# the library locks the fd its shell opened: --fd
	local lib
	lib=$("$LOCKBOX" --shell-lib)
	cat >"$T/reader" <<'EOF2'
. "$1" || exit 125
acquire_mutex -s "$2" || exit
printf '%s\n' "$$" >"$3.tmp" && mv "$3.tmp" "$3"
read -r _ <"$4"
release_mutex "$2"
EOF2
	mkfifo "$T/go"
	spawn bash "$T/reader" "$lib" "$F" "$T/r1" "$T/go"
	local r1=$SPAWN_PID
	wait_for test -s "$T/r1"
	# shellcheck disable=SC2016 # expanded by the inner bash
	run -0 --separate-stderr bash -c '. "$1" && acquire_mutex --shared "$2" && "$3" mutex "$2" list' \
		sh "$lib" "$F" "$LOCKBOX"
	assert_regex "${lines[1]}" "^1 +$r1 +$AGE_RE +shared: reader\$"
	assert_regex "${lines[2]}" "^2 +[0-9]+ +$AGE_RE +shared: bash\$"
	# shellcheck disable=SC2016 # expanded by the inner bash
	run -75 --separate-stderr bash -c '. "$1" && acquire_mutex "$2"' sh "$lib" "$F"
	assert_stderr_regex "^mutex: $(re_quote "$F"): held by PID $r1 \\(reader, $AGE_RE, shared\\)\$"
	# shellcheck disable=SC2016 # expanded by the inner bash
	run -125 --separate-stderr bash -c '. "$1" && acquire_slot -s "$2" 3' sh "$lib" "$F"
	assert_stderr "acquire_slot: -s goes with acquire_mutex: a slot is never shared"
	echo >"$T/go"
	reap "$r1"
	assert_equal "$REAP_STATUS" 0
	run -0 "$LOCKBOX" mutex "$F" check
	assert_output 0
}

# One lock a path (DESIGN principle 2): who gets in never depends on what
# the file holds, and every peer's kind of lock excludes and is excluded.

# overwrite_head FILE: its first 16 bytes (a lock file's magic) zeroed, in place.
overwrite_head() {
	dd if=/dev/zero of="$1" bs=16 count=1 conv=notrunc status=none
}

# bats test_tags=wait
@test "one lock a path: a lock file cut short, overwritten or opened with 9> under its holder lets no second holder in" {
	local how lock holder unnamed
	for how in truncate overwrite redirect; do
		lock=$T/$how.lock
		hold_marked "$T/$how.held" "$LOCKBOX" mutex "$lock"
		holder=$SPAWN_PID
		case $how in
		truncate) : >"$lock" ;;
		overwrite) overwrite_head "$lock" ;;
		redirect) exec 9>"$lock" && exec 9>&- ;;
		esac
		run -75 --separate-stderr "$LOCKBOX" mutex "$lock" touch "$T/ran"
		# (the holder's slot lock is its too, when the refusal's bounded
		# look finds its process in time; on a busy host it may be "?", or
		# the look may find nobody at all: the record is gone)
		unnamed="held by another program; 'lockbox locks $(re_quote "$lock")' shows who"
		assert_stderr_regex "^mutex: $(re_quote "$lock"): (held by PID $holder \\(sleep, $AGE_RE\\)|held \\(PIDs $holder, \\?\\)|$unnamed)\$"
		run -0 "$LOCKBOX" mutex "$lock" check
		assert_output 1
		run -0 "$LOCKBOX" mutex "$lock" held
		# flock(1)'s FD form on the same file, as mutex(1) shows it
		# shellcheck disable=SC2016 # expanded by the inner bash
		run -75 --separate-stderr bash -c 'exec 9>"$2"; "$1" mutex -n 9' sh "$LOCKBOX" "$lock"
		run -75 --separate-stderr "$LOCKBOX" mutex -w 0.2 "$lock" touch "$T/ran"
		run -75 --separate-stderr "$LOCKBOX" slots "$lock" 1 touch "$T/ran"
		# the library too, its builtin or the binary
		# shellcheck disable=SC2016 # expanded by the child shell
		run -75 --separate-stderr bash -c '. "$("$LOCKBOX" --shell-lib)"; acquire_mutex "$1"' sh "$lock"
		assert_stderr_regex "held by PID $holder |held \\(PIDs $holder, \\?\\)|$unnamed"
		stop_pid "$holder"
		assert [ ! -e "$T/ran" ]
		# free again: taken, as any file or as a lock file
		run -0 "$LOCKBOX" mutex "$lock" true
	done
}

# bats test_tags=privilege,wait
@test "one lock a path: a file another user planted in a sticky directory is refused, and a header written into a held file lets nobody in" {
	need_root_and_nobody
	local d holder
	d=$(world_readable_dir)
	chmod 1777 "$d"
	as_nobody touch "$d/job.lock"
	run -125 --separate-stderr "$LOCKBOX" mutex "$d/job.lock" touch "$T/ran"
	assert_stderr "mutex: $d/job.lock: $STICKY_REFUSAL"
	assert [ ! -e "$T/ran" ]
	assert_equal "$(stat -c %s "$d/job.lock")" 0
	# a lock file made to be shared is another user's too, which its owner
	# may delete and make again under root's holder: refused, whatever its mode
	as_nobody "$LOCKBOX" mutex --mode 0666 "$d/pool.lock" create
	run -125 --separate-stderr "$LOCKBOX" mutex "$d/pool.lock" touch "$T/ran"
	assert_stderr "mutex: $d/pool.lock: $STICKY_REFUSAL"
	run -125 --separate-stderr "$LOCKBOX" slots "$d/pool.lock" 2 touch "$T/ran"
	assert_stderr "slots: $d/pool.lock: $STICKY_REFUSAL"
	assert [ ! -e "$T/ran" ]
	# its owner uses it
	run -0 --separate-stderr as_nobody "$LOCKBOX" mutex "$d/pool.lock" true
	# root's own empty file that others may write: held as any file, a
	# lockbox header written into it lets no second holder in
	: >"$d/own.lock"
	chmod 0666 "$d/own.lock"
	"$LOCKBOX" mutex "$T/hdr.lock" create
	hold_marked "$T/held" "$LOCKBOX" mutex "$d/own.lock"
	holder=$SPAWN_PID
	# shellcheck disable=SC2016 # expanded by the inner sh
	as_nobody sh -c 'cat >"$1"' sh "$d/own.lock" <"$T/hdr.lock"
	run -0 head -c 15 "$d/own.lock"
	assert_output "lockbox lock v1"
	run -75 --separate-stderr "$LOCKBOX" mutex "$d/own.lock" touch "$T/ran"
	# (its process when the refusal's bounded look finds it in time)
	assert_stderr_regex "$(held_re mutex "$d/own.lock" "$holder" sleep)"
	run -75 --separate-stderr "$LOCKBOX" mutex -w 0.2 "$d/own.lock" touch "$T/ran"
	stop_pid "$holder"
	assert [ ! -e "$T/ran" ]
}

# self_lock_idiom: the line of mutex(1)'s example of a script that
# locks itself, which README.md prints too
self_lock_idiom() {
	local src=${LOCKBOX_SRCDIR:-$(cd "$BATS_TEST_DIRNAME/.." && pwd)} line
	# shellcheck disable=SC2016 # the script's own $0 and $@, matched as written
	line=$(grep -m 1 -E '^\[ .* \|\| exec .*mutex .*"\$0" "\$0" "\$@"$' "$src/man/mutex.1.in") &&
		grep -qxF -- "$line" "$src/README.md" && printf '%s\n' "$line"
}

# self_locking NAME FORM: a script that locks itself and runs itself, in
# the form mutex(1) prints (lockbox) or flock(1) does (flock), running the
# binary under test where the unprivileged user can reach it too, once
# nobody_reach has found it (the script holds its path).
self_locking() {
	local f=$1 bin=${NOBODY_LOCKBOX:-$LOCKBOX} idiom
	# shellcheck disable=SC2016 # expanded by the script
	case $2 in
	lockbox)
		idiom=$(self_lock_idiom) || return
		printf '#!/bin/sh\n%s\necho "ran $*"\n[ -z "$HOLD" ] || { : >"$HOLD"; exec sleep 600; }\n' \
			"${idiom/ mutex / \"$bin\" mutex }" >"$f" ;;
	flock)
		printf '#!/bin/sh\n[ "${FLOCKER}" != "$0" ] && exec env FLOCKER="$0" "%s" mutex -en "$0" "$0" "$@" || :\necho "ran $*"\n[ -z "$HOLD" ] || { : >"$HOLD"; exec sleep 600; }\n' \
			"$bin" >"$f" ;;
	esac
	chmod 0755 "$f"
}

@test "a script locks itself and runs itself: mutex(1)'s example and flock(1)'s boilerplate" {
	local form
	for form in lockbox flock; do
		self_locking "$T/job.$form" "$form"
		run -0 --separate-stderr env HOLD= "$T/job.$form" a b
		assert_output "ran a b"
		assert_stderr ""
		# while one runs, another start is kept out (quietly for -E 0; 75 for -en, where flock(1) says 1),
		# never 126 "Text file busy"
		spawn env HOLD="$T/held.$form" "$T/job.$form" first
		wait_for test -e "$T/held.$form"
		local st=0
		[[ $form == flock ]] && st=75
		run "-$st" --separate-stderr env HOLD= "$T/job.$form" second
		assert_output ""
		stop_pid "$SPAWN_PID"
	done
}

@test "mutex(1)'s self-locking script runs once under slots, in a unit's environment and after acquire_slot" {
	need_ofd	# the library locks the fd its shell opened: --fd
	local lib unit
	lib=$("$LOCKBOX" --shell-lib)
	# the environment systemd gives a service, one of a pool of workers
	# that a slots line started (lockbox-systemd(7)'s worker unit)
	unit=(env -i PATH="$PATH" LANG=C.UTF-8 INVOCATION_ID=0123456789abcdef0123456789abcdef
		JOURNAL_STREAM=8:12345 SYSTEMD_EXEC_PID=$$ LOCKBOX_SLOT=1)
	self_locking "$T/job" lockbox
	# a job of a slots pool: LOCKBOX_SLOT names the pool's slot, not this lock
	spawn "$LOCKBOX" slots "$T/pool" 4 env HOLD="$T/held.slots" "$T/job" first
	wait_for test -e "$T/held.slots"
	run -0 --separate-stderr "$LOCKBOX" slots "$T/pool" 4 env HOLD= "$T/job" second
	assert_output ""
	assert_stderr ""
	stop_pid "$SPAWN_PID"
	# a unit's environment, LOCKBOX_SLOT among it
	spawn "${unit[@]}" HOLD="$T/held.unit" "$T/job" first
	wait_for test -e "$T/held.unit"
	run -0 --separate-stderr "${unit[@]}" HOLD= "$T/job" second
	assert_output ""
	stop_pid "$SPAWN_PID"
	# children of scripts that took a slot with the library
	# shellcheck disable=SC2016 # expanded by the inner bash
	spawn bash -c '. "$1" && acquire_slot "$2" 4 && HOLD=$3 exec "$4" first' sh \
		"$lib" "$T/lib.pool" "$T/held.lib" "$T/job"
	wait_for test -e "$T/held.lib"
	# shellcheck disable=SC2016 # expanded by the inner bash
	run -0 --separate-stderr bash -c '. "$1" && acquire_slot "$2" 4 && HOLD= "$3" second' sh \
		"$lib" "$T/lib.pool" "$T/job"
	assert_output ""
	assert_stderr ""
	stop_pid "$SPAWN_PID"
	# with the holder gone, each place runs it
	run -0 --separate-stderr "$LOCKBOX" slots "$T/pool" 4 env HOLD= "$T/job" third
	assert_output "ran third"
	run -0 --separate-stderr "${unit[@]}" HOLD= "$T/job" fourth
	assert_output "ran fourth"
}

# bats test_tags=privilege,wait
@test "a script locks itself as its owner and as a user who may only read it" {
	need_root_and_nobody
	local d form
	d=$(world_readable_dir)
	for form in lockbox flock; do
		self_locking "$d/job.$form" "$form"
		run -0 --separate-stderr as_nobody env HOLD= "$d/job.$form" reader
		assert_output "ran reader"
		chown 65534 "$d/job.$form"
		run -0 --separate-stderr as_nobody env HOLD= "$d/job.$form" owner
		assert_output "ran owner"
	done
}

# peer_hold NAME FILE: a peer tool holding FILE (its own way), PEER_PID its holder.
peer_hold() {
	local py=/usr/bin/python3
	case $1 in
	flock) hold_marked "$T/peer.held" flock "$2" ;;
	setlock) hold_marked "$T/peer.held" setlock "$2" ;;
	chpst) hold_marked "$T/peer.held" chpst -l "$2" ;;
	s6-setlock) hold_marked "$T/peer.held" s6-setlock "$2" ;;
	lckdo) hold_marked "$T/peer.held" lckdo -w "$2" ;;
	filelock | portalocker)
		# shellcheck disable=SC2016 # python's
		spawn "$py" -c '
import signal, sys
kind, path, mark = sys.argv[1:4]
if kind == "filelock":
    import filelock
    l = filelock.FileLock(path, timeout=0)
    l.acquire()
else:
    import portalocker
    l = portalocker.Lock(path, "a", timeout=0)
    l.acquire()
open(mark, "w").write("held\n")
signal.pause()' "$1" "$2" "$T/peer.held"
		wait_for test -s "$T/peer.held" ;;
	lockf) foreign_lockf ex "$2" ;;
	esac
	# the peer's process that holds the lock (the command it ran, or python)
	PEER_PID=$SPAWN_PID
}

# peer_try NAME FILE: the peer tool's own attempt that does not wait: 0 taken.
peer_try() {
	case $1 in
	flock) flock -n "$2" true ;;
	setlock) setlock -n "$2" true 2>/dev/null ;;
	chpst) chpst -L "$2" true 2>/dev/null ;;
	s6-setlock) s6-setlock -n "$2" true 2>/dev/null ;;
	lckdo) lckdo -q "$2" true ;;
	filelock | portalocker | lockf)
		/usr/bin/python3 -c '
import sys, fcntl
kind, path = sys.argv[1:3]
try:
    if kind == "filelock":
        import filelock
        filelock.FileLock(path, timeout=0).acquire()
    elif kind == "portalocker":
        import portalocker
        portalocker.Lock(path, "a", timeout=0).acquire()
    else:
        fcntl.lockf(open(path, "r+"), fcntl.LOCK_EX | fcntl.LOCK_NB)
except Exception:
    sys.exit(1)' "$1" "$2" ;;
	esac
}

peers() {
	local p
	for p in flock setlock chpst s6-setlock lckdo; do
		command -v "$p" >/dev/null && printf '%s\n' "$p"
	done
	for p in filelock portalocker; do
		/usr/bin/python3 -c "import $p" 2>/dev/null && printf '%s\n' "$p"
	done
	[[ -x /usr/bin/python3 ]] && printf 'lockf\n'
}

@test "every peer's lock, on a lock file and on a plain file, both ways: flock(1), setlock, chpst, s6-setlock, lckdo, filelock, portalocker, lockf" {
	need_flock
	local peer kind lock holder n=0
	for peer in $(peers); do
		n=$((n + 1))
		for kind in lockfile plain; do
			lock=$T/$peer.$kind
			rm -f "$lock"
			if [[ $kind == lockfile ]]; then
				"$LOCKBOX" mutex "$lock" create
			else
				printf 'data\n' >"$lock"
			fi
			# lockbox holds: the peer is kept out
			hold_marked "$T/held" "$LOCKBOX" mutex "$lock"
			holder=$SPAWN_PID
			# mutex wrote nothing into a file that is not its own
			[[ $kind == lockfile ]] || assert_equal "$(cat "$lock")" data
			# (filelock opens its lock file with O_TRUNC: it cuts it short, and is kept out)
			if peer_try "$peer" "$lock"; then
				fail "$peer took $kind $lock while mutex held it"
			fi
			stop_pid "$holder"
			rm -f "$T/held"
			# the peer holds: lockbox is refused, 75, naming its process
			[[ $kind == plain ]] && printf 'data\n' >"$lock"
			peer_hold "$peer" "$lock"
			run -75 --separate-stderr "$LOCKBOX" mutex "$lock" touch "$T/ran"
			# (its process, when a look of a few milliseconds finds it)
			assert_stderr_regex "(PID [0-9?]+|another program; 'lockbox locks .*' shows who)"
			# (held reads the kernel's table, a page at a time: on a busy
			# host a line at a page's edge may be missed once)
			wait_for "$LOCKBOX" mutex "$lock" held
			stop_pid "$PEER_PID"
			rm -f "$T/peer.held"
			assert [ ! -e "$T/ran" ]
		done
	done
	((n >= 2)) || skip "fewer than two peer tools installed"
}

# reader_try NAME FILE: the peer's shared attempt that does not wait: 0 taken.
reader_try() {
	case $1 in
	s6-setlock) s6-setlock -r -n "$2" true 2>/dev/null ;;
	lckdo) lckdo -s -q "$2" true ;;
	lockf)
		/usr/bin/python3 -c 'import fcntl, sys
try:
    fcntl.lockf(open(sys.argv[1]), fcntl.LOCK_SH | fcntl.LOCK_NB)
except OSError:
    sys.exit(1)' "$2" ;;
	esac
}

@test "exclusive keeps every reader kind out of an emptied lock file and of a data file: s6-setlock -r, lckdo -s, lockf(LOCK_SH); mutex -s lets them in" {
	local readers=() peer kind lock
	command -v s6-setlock >/dev/null && readers+=(s6-setlock)
	command -v lckdo >/dev/null && readers+=(lckdo)
	[[ -x /usr/bin/python3 ]] && readers+=(lockf)
	((${#readers[@]} > 0)) || skip "no reader tool installed"
	for kind in emptied data; do
		lock=$T/$kind
		if [[ $kind == emptied ]]; then
			# (what : >F, logrotate's copytruncate and Python's filelock leave)
			"$LOCKBOX" mutex "$lock" create
			: >"$lock"
		else
			printf 'data\n' >"$lock"
		fi
		hold_marked "$T/held" "$LOCKBOX" mutex "$lock"
		for peer in "${readers[@]}"; do
			if reader_try "$peer" "$lock"; then
				fail "$peer took a read lock of the $kind file while mutex held it"
			fi
		done
		stop_pid "$SPAWN_PID"
		rm -f "$T/held"
		hold_marked "$T/held" "$LOCKBOX" mutex -s "$lock"
		for peer in "${readers[@]}"; do
			reader_try "$peer" "$lock" || fail "$peer was kept out of the $kind file by mutex -s"
		done
		stop_pid "$SPAWN_PID"
		rm -f "$T/held"
		# nothing written into it
		if [[ $kind == emptied ]]; then
			assert [ ! -s "$lock" ]
		else
			assert_equal "$(cat "$lock")" data
		fi
	done
}

# bats test_tags=privilege
@test "flock(1) and mutex exclude each other on a file either made first (/run/lock after a reboot), and after slots adopted flock(1)'s empty file" {
	need_flock
	local first
	for first in flock mutex slots; do
		rm -f "$F"
		case $first in
		flock) flock "$F" true ;;
		mutex) "$LOCKBOX" mutex "$F" true ;;
		slots) flock "$F" true && "$LOCKBOX" slots "$F" 2 true ;;
		esac
		hold_marked "$T/held" flock "$F"
		run -75 --separate-stderr "$LOCKBOX" mutex "$F" touch "$T/ran"
		stop_pid "$SPAWN_PID"
		stop_pid "$(cat "$T/held")"
		rm -f "$T/held"
		hold_marked "$T/held" "$LOCKBOX" mutex "$F"
		run -1 flock -n "$F" touch "$T/ran"
		stop_pid "$SPAWN_PID"
		rm -f "$T/held"
		assert [ ! -e "$T/ran" ]
	done
}

# bats test_tags=wait
@test "the path still names what is held: a waiter whose file was replaced at its path waits for the file there" {
	local a b w
	hold_marked "$T/a.held" "$LOCKBOX" mutex "$F"
	a=$SPAWN_PID
	# shellcheck disable=SC2016 # expanded by the waiter's sh
	spawn "$LOCKBOX" mutex -w 60 "$F" sh -c 'touch "$1"' sh "$T/ran"
	w=$SPAWN_PID
	wait_for waiting_on "$F" 1
	# another file renamed over the path: list says who holds the old one
	# (held tests the file there alone, and says nothing of the host's locks)
	"$LOCKBOX" mutex "$T/new" create
	mv "$T/new" "$F"
	run -1 --separate-stderr "$LOCKBOX" mutex "$F" held
	assert_stderr ""
	run -0 --separate-stderr "$LOCKBOX" mutex "$F" list
	assert_output "SLOT  PID      AGE     COMMAND"
	assert_stderr "mutex: $F: PID $a (sleep) holds a lock on a file that was at this path and has been replaced or deleted"
	# and a holder of the new one
	hold_marked "$T/b.held" "$LOCKBOX" mutex "$F"
	b=$SPAWN_PID
	stop_pid "$a"
	# the waiter finds its file gone from the path, and waits for the one there
	wait_for waiting_on "$F" 1
	assert [ ! -e "$T/ran" ]
	stop_pid "$b"
	reap "$w"
	assert_equal "$REAP_STATUS" 0
	assert [ -e "$T/ran" ]
}
