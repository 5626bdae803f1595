#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# shellcheck shell=bats
# lockbox locks: every lock on the host, of every kind, with its process;
# lockbox's holders and waiters; lslocks's options; escaped names; bounded
# cost against one read of /proc/locks; and list's view of another
# program's lock in the wait queue.

load test_helper

# lockbox locks stops looking after 5 s by default: the cases that want
# the whole table give it 10,000 of lockbox's own paces (at least 5 s),
# which an instrumented build on a busy host needs (a sanitizers' build
# at a load of 40 stopped short at 5 s)
locks_timeout() {
	printf '%ss\n' "$(paces_or 10000 5)"
}

# locks_lines N ARG...: run lockbox locks ARG..., again up to twice while
# it prints other than N lines: it reads the table once, a page a read,
# and on a busy host a lock taken or dropped between two reads hides the
# line at the boundary, or shows it twice (from lslocks too). As the
# user LOCKS_AS names (as_nobody), when set.
locks_lines() {
	local want=$1 _
	shift
	for _ in 1 2 3; do
		run -0 --separate-stderr ${LOCKS_AS:+"$LOCKS_AS"} "$LOCKBOX" locks --timeout "$(locks_timeout)" "$@"
		((${#lines[@]} != want)) || break
	done
}

# locks_with LINE... -- ARG...: lockbox locks ARG..., again up to twice
# while a LINE is not among its lines (a line at a page's edge, as in
# locks_lines; the table may hold other lines than the test's).
locks_with() {
	local want=() w _ all
	while [[ $1 != -- ]]; do
		want+=("$1")
		shift
	done
	shift
	for _ in 1 2 3; do
		run -0 --separate-stderr ${LOCKS_AS:+"$LOCKS_AS"} "$LOCKBOX" locks --timeout "$(locks_timeout)" "$@"
		all=1
		for w in "${want[@]}"; do
			grep -qxF -- "$w" <<<"$output" || all=0
		done
		((all == 0)) || break
	done
}

need_locks() {
	[[ -r /proc/locks ]] || skip "no /proc/locks"
}

# marked PATH: the command a holder runs: say so in PATH, then hold on.
# shellcheck disable=SC2016 # expanded by the holder's sh
MARK_AND_HOLD='echo "$$" >"$1.tmp" && mv "$1.tmp" "$1" && exec sleep 600'

# rows_json [ARG...]: lockbox locks -J ARG..., checked to be one JSON document
rows_json() {
	run -0 --separate-stderr "$LOCKBOX" locks --timeout "$(locks_timeout)" -J "$@"
	valid_json <<<"$output"
}

# ofd_lock FILE START LEN: another program (python3) takes an open file
# description write lock on FILE, and holds it; FOREIGN_PID is its PID.
ofd_lock() {
	local py ready=$T/ofd.$SPAWNS.ready
	py=$(command -v python3) || skip "needs python3"
	"$py" -c 'import fcntl; fcntl.F_OFD_SETLK' 2>/dev/null || skip "python3 has no F_OFD_SETLK"
	spawn "$py" -c '
import fcntl, os, signal, struct, sys
fd = os.open(sys.argv[1], os.O_RDWR)
fcntl.fcntl(fd, fcntl.F_OFD_SETLK, struct.pack("hhqqi", fcntl.F_WRLCK, 0, int(sys.argv[2]), int(sys.argv[3]), 0))
open(sys.argv[4], "w").close()
signal.pause()
' "$1" "$2" "$3" "$ready"
	# shellcheck disable=SC2034 # for the tests
	FOREIGN_PID=$SPAWN_PID
	wait_for test -e "$ready"
}

# ms CMD...: the wall time CMD takes, in whole milliseconds, in MS (its status in MS_STATUS)
ms() {
	local t0 t1
	t0=$EPOCHREALTIME
	MS_STATUS=0
	"$@" >/dev/null 2>&1 || MS_STATUS=$?
	t1=$EPOCHREALTIME
	MS=$(((${t1/./} - ${t0/./}) / 1000))
}

# one_read: the time of one read of the kernel's lock table, as cat reads it, in ms (at least 1)
one_read() {
	ms cat /proc/locks
	((MS > 0)) || MS=1
	READ_MS=$MS
}

# answers_in MS CMD...: CMD ends with 75 within MS ms, four reads of the
# kernel's lock table and lockbox's own start and pace (ten paces, which
# an instrumented build or a busy host makes slower than cat's read),
# each measured just before it; the best of three tries, as a busy host
# may stall any one of them (a run over the bound is over it in all three)
answers_in() {
	local bound=$1 read slack _
	shift
	for _ in 1 2 3; do
		one_read
		read=$READ_MS slack=$(($(pace) / 100))
		ms "$@"
		assert_equal "$MS_STATUS" 75
		((MS > bound + 4 * read + slack)) || return 0
	done
	fail "$* answered after $MS ms, one read of /proc/locks $read ms, 10 paces $slack ms"
}

# hold_files DIR N: one process holds N lockbox lock files DIR/fK.lock:
# mutex f0 mutex f1 ... sleep, each mutex running the next in its place
# (the locks are kept across exec, of either kind); HOLD_PID is its PID.
hold_files() {
	local i chain=()
	for ((i = 0; i < $2; i++)); do
		chain+=("$LOCKBOX" mutex "$1/f$i.lock")
	done
	spawn "${chain[@]}" sh -c "$MARK_AND_HOLD" sh "$1/ready"
	HOLD_PID=$SPAWN_PID
	wait_for -t 600 holder_ready "$1/ready" "$HOLD_PID"
}

# hold_many FILE COUNT: another program (lockhold) holds COUNT locks on
# FILE, one every 256 bytes from 4096 (taking them costs the kernel a walk
# of the locks taken so far each: minutes on a loaded machine); LOCKHOLD_PID.
hold_many() {
	local ready=$T/many.$SPAWNS.ready mode=()
	ofd_build || mode=(-p)
	spawn "$LOCKHOLD" "${mode[@]}" -n "$2" "$1" 4096 1 "$ready"
	LOCKHOLD_PID=$SPAWN_PID
	wait_for -t 600 test -e "$ready"
}

# bats test_tags=lockkind,wait
@test "locks: every kind of lock with its process: flock(1), lockf(3), another program's OFD lock, lockbox's holder and waiter, a mutex on a plain file" {
	need_locks
	need_lockhold
	command -v flock >/dev/null || skip "needs flock(1)"
	printf 'data\n' >"$T/flocked"
	printf 'data\n' >"$T/posix"
	printf 'data\n' >"$T/ofd"
	printf 'data\n' >"$T/ofd.py"
	printf 'data\n' >"$T/plain"
	spawn flock "$T/flocked" sh -c "$MARK_AND_HOLD" sh "$T/flocked.mark"
	local flock_pid=$SPAWN_PID
	wait_for test -s "$T/flocked.mark"
	foreign_lockf ex "$T/posix" 10 5
	local posix_pid=$FOREIGN_PID
	lockhold "$T/ofd" 100 50
	ofd_lock "$T/ofd.py" 0 8
	local ofd_py=$FOREIGN_PID
	spawn "$LOCKBOX" mutex "$T/plain" sh -c "$MARK_AND_HOLD" sh "$T/plain.mark"
	local plain_pid=$SPAWN_PID
	wait_for test -s "$T/plain.mark"
	spawn "$LOCKBOX" mutex "$F" sh -c "$MARK_AND_HOLD" sh "$T/held"
	local holder=$SPAWN_PID
	wait_for test -s "$T/held"
	spawn "$LOCKBOX" mutex -w 60 "$F" true
	local waiter=$SPAWN_PID
	wait_for waiting_on "$F" 1
	rows_json
	# shellcheck disable=SC2016 # python's
	run -0 python3 -c '
import json, sys
doc = json.load(sys.stdin)
rows = {}
for r in doc["locks"]:
    rows.setdefault(r["path"], []).append(r)
t = sys.argv[2]
def one(path):
    v = rows.get(path)
    assert v is not None and len(v) == 1, (path, v)
    return v[0]
r = one(t + "/flocked")
assert (r["type"], r["mode"], r["pid"], r["start"], r["end"]) == ("FLOCK", "WRITE", int(sys.argv[3]), 0, None), r
r = one(t + "/posix")
assert (r["type"], r["mode"], r["pid"], r["start"], r["end"]) == ("POSIX", "WRITE", int(sys.argv[4]), 5, 14), r
r = one(t + "/ofd")
assert r["type"] in ("OFDLCK", "POSIX") and r["pid"] == int(sys.argv[5]) and r["command"] == "lockhold", r
assert (r["start"], r["end"]) == (100, 149), r
r = one(t + "/ofd.py")
assert (r["type"], r["pid"], r["command"], r["start"], r["end"]) == ("OFDLCK", int(sys.argv[6]), "python3", 0, 7), r
r = one(t + "/plain")
assert r["type"] == "FLOCK" and r["pid"] == int(sys.argv[7]) and r["note"].startswith("mutex"), r
v = rows[t + "/lock"]
assert len(v) == 2, v
assert v[0]["slot"] == 1 and v[0]["pid"] == int(sys.argv[8]) and v[0]["mode"] == "WRITE", v
assert v[0]["age"] >= 0 and v[0]["command"] == "sh", v
assert v[1]["pid"] == int(sys.argv[9]) and v[1]["mode"] == "WRITE*" and v[1]["note"] == "waiting 1st", v
assert doc["stopped_short"] is False
print("ok")' - "$T" "$flock_pid" "$posix_pid" "$LOCKHOLD_PID" "$ofd_py" "$plain_pid" \
		"$holder" "$waiter" <<<"$output"
	assert_output ok
	# the text table: a heading, and the same rows
	run -0 --separate-stderr "$LOCKBOX" locks --timeout "$(locks_timeout)" -u
	assert_stderr ""
	assert_line --index 0 --regexp '^COMMAND +PID TYPE +MODE +START +END SLOT AGE +NOTE +PATH$'
	assert_line --regexp "^lockhold +$LOCKHOLD_PID (OFDLCK|POSIX) +WRITE +100 +149 .* $(re_quote "$T/ofd")\$"
	assert_line --regexp "^sh +$holder (OFDLCK|POSIX) +WRITE +4096 +4096 +1 +$AGE_RE +$(re_quote "$F")\$"
	# a waiter is named by the command it waits to run
	assert_line --regexp "^true +$waiter (OFDLCK|POSIX) +WRITE\\* .* waiting 1st +$(re_quote "$F")\$"
}

@test "locks: a path or command with newlines, escapes and spaces is escaped in text, raw and JSON" {
	need_locks
	command -v flock >/dev/null || skip "needs flock(1)"
	local evil
	evil=$T/$'evil\n1  4242 sshd 9d\e[31mred'
	printf 'data\n' >"$evil"
	spawn flock "$evil" sh -c "$MARK_AND_HOLD" sh "$T/mark"
	local pid=$SPAWN_PID
	wait_for test -s "$T/mark"
	locks_lines 2 -u -p "$pid"
	assert_equal "${#lines[@]}" 2
	assert_line --index 1 --regexp "$(re_quote "$T")/evil\\\\n1  4242 sshd 9d\\\\x1b\\[31mred\$"
	refute_output --partial $'\e'
	locks_lines 1 -r -n -o PID,PATH -p "$pid"
	assert_output "$pid $T/evil\\n1\\x20\\x204242\\x20sshd\\x209d\\x1b[31mred"
	rows_json -p "$pid"
	# shellcheck disable=SC2016 # python's
	run -0 python3 -c '
import json, sys
v = json.loads(sys.argv[1])["locks"]
assert len(v) == 1 and v[0]["path"] == sys.argv[2] and v[0]["pid"] == int(sys.argv[3]), v
print("ok")' "$output" "$evil" "$pid"
	assert_output ok
	refute_output --partial $'\e'
}

# bats test_tags=lockkind
@test "locks: -p PID, -o COLUMNS and +COLUMNS, --output-all, -n, -r, -l, and nothing held said so, but never when stopped short" {
	need_locks
	command -v flock >/dev/null || skip "needs flock(1)"
	printf 'data\n' >"$T/plain"
	spawn flock "$T/plain" sh -c "$MARK_AND_HOLD" sh "$T/mark"
	local fl=$SPAWN_PID
	wait_for test -s "$T/mark"
	spawn "$LOCKBOX" mutex "$F" sh -c "$MARK_AND_HOLD" sh "$T/held"
	local holder=$SPAWN_PID
	wait_for test -s "$T/held"
	locks_lines 2 -p "$fl" -o pid,TYPE,path
	assert_line --index 0 --regexp '^ *PID TYPE  PATH$'
	assert_line --index 1 --regexp "^ *$fl FLOCK $(re_quote "$T/plain")\$"
	assert_equal "${#lines[@]}" 2
	locks_lines 1 -n -r -p "$fl" -o +BLOCKER,INODE,MAJ:MIN,SIZE,M
	assert_output --regexp "^flock $fl FLOCK WRITE 0 EOF +$(re_quote "$T/plain")  $(stat -c %i "$T/plain") [0-9]+:[0-9]+ 5 0\$"
	locks_lines 1 -n -p "$fl" --output-all
	assert_equal "${#lines[@]}" 1
	# -l: lockbox lock files only
	locks_with "$holder 1 $F" -- -l -r -n -o PID,SLOT,PATH
	assert_line "$holder 1 $F"
	refute_line --partial "$T/plain"
	# one PID that holds nothing, as text, raw and JSON
	run -0 --separate-stderr "$LOCKBOX" locks --timeout "$(locks_timeout)" -p "$$"
	assert_output "nothing is held"
	run -0 --separate-stderr "$LOCKBOX" locks --timeout "$(locks_timeout)" -r -p "$$"
	assert_output "COMMAND PID TYPE MODE START END SLOT AGE NOTE PATH"
	run -0 --separate-stderr "$LOCKBOX" locks --timeout "$(locks_timeout)" -r -n -p "$$"
	assert_output ""
	rows_json -p "$$"
	assert_output '{"locks":[],"stopped_short":false}'
	# -l stopped short (no time at all): the lock files not looked at are
	# rows that say so, and nothing is ever said to be held or not
	"$LOCKBOX" locks -l --timeout 0 -u -n -o PATH,NOTE >"$T/short" 2>"$T/short.err"
	run -0 cat "$T/short.err"
	assert_output --regexp "^locks: stopped short after 0ms: "
	# (other lock files of this host may be listed, each not looked at either)
	if [[ $(cat "$T/short") != "none found before it stopped short" ]]; then
		run -1 grep -c -v -e 'not looked at: stopped short$' "$T/short"
		assert_output 0
	fi
}

# bats test_tags=lockkind,privilege,quick
@test "locks: lslocks's options lockbox does not have, and bad input: 125, one line naming the nearest option, nothing changed" {
	need_locks
	local opt
	for opt in -b --bytes; do
		run -125 --separate-stderr "$LOCKBOX" locks "$opt"
		assert_stderr "locks: -b (--bytes) is lslocks's: SIZE is in bytes here already (-o +SIZE)
Try 'lockbox locks --help'."
	done
	for opt in -i --noinaccessible; do
		run -125 --separate-stderr "$LOCKBOX" locks "$opt"
		assert_stderr_regex "^locks: -i \\(--noinaccessible\\) is lslocks's: -l shows"
	done
	run -125 --separate-stderr "$LOCKBOX" locks -o PID,NOPE
	assert_stderr "locks: unknown column 'NOPE' (-H lists the columns)
Try 'lockbox locks --help'."
	run -125 --separate-stderr "$LOCKBOX" locks -p 0
	assert_stderr_regex "^locks: invalid PID '0'"
	run -125 --separate-stderr "$LOCKBOX" locks -p 12x
	assert_stderr_regex "^locks: invalid PID '12x'"
	run -125 --separate-stderr "$LOCKBOX" locks --timeout 5x
	assert_stderr_regex "^locks: invalid duration '5x'"
	run -125 --separate-stderr "$LOCKBOX" locks extra
	assert_stderr "locks: unexpected argument 'extra'
Try 'lockbox locks --help'."
	assert_output ""
	run -0 "$LOCKBOX" locks --help
	assert_line --partial -- '--timeout DUR'
	# -H, as lslocks has it: each column and what it holds
	run -0 --separate-stderr "$LOCKBOX" locks -H
	assert_line --regexp '^NOTE +what else is known'
	assert_equal "${#lines[@]}" 15
}

# hold_marked_root LOCKFILE: root holds LOCKFILE (mode 0644) with mutex, until killed.
hold_marked_root() {
	spawn "$LOCKBOX" mutex --mode 0644 "$1" sh -c "$MARK_AND_HOLD" sh "$T/root.mark"
	wait_for test -s "$T/root.mark"
}

# bats test_tags=lockkind,privilege
@test "locks: a lock file that cannot be read is a row saying so, not an abort; another user sees their own" {
	need_locks
	need_root_and_nobody
	local d
	d=$(world_readable_dir)
	chmod 0777 "$d"
	mkdir "$d/in"
	chmod 0777 "$d/in"
	# shellcheck disable=SC2016 # expanded by the inner sh
	spawn setpriv --reuid=65534 --regid=65534 --clear-groups "${NOBODY_LOCKBOX:-$LOCKBOX}" \
		mutex "$d/in/x.lock" sh -c 'echo "$$" >"$1.tmp" && mv "$1.tmp" "$1" && exec sleep 600' sh "$d/pid"
	wait_for test -s "$d/pid"
	local pid
	pid=$(cat "$d/pid")
	track_pid "$pid"
	run -0 --separate-stderr as_nobody "$LOCKBOX" locks --timeout "$(locks_timeout)" -r -n -o PID,SLOT,PATH -p "$pid"
	assert_output "$pid 1 $d/in/x.lock"
	# the directory closed to that user: the file cannot be looked at, and its row says so
	chmod 0700 "$d/in"
	LOCKS_AS=as_nobody locks_lines 2 -r -n -o PID,NOTE,PATH -p "$pid"
	assert_stderr ""
	# its slot's lock and its flock(2) lock, each as the kernel shows it
	assert_equal "${#lines[@]}" 2
	assert_equal "${lines[0]}" "$pid cannot\\x20read\\x20it:\\x20Permission\\x20denied $d/in/x.lock"
	assert_equal "${lines[1]}" "${lines[0]}"
	# root's lock files are not this user's to see; root sees both
	hold_marked_root "$d/root.lock"
	run -0 --separate-stderr as_nobody "$LOCKBOX" locks --timeout "$(locks_timeout)" -l -r -n -o PATH
	refute_output --partial "$d/root.lock"
	locks_with "$d/root.lock" "$d/in/x.lock" -- -l -r -n -o PATH
	assert_line "$d/root.lock"
	assert_line "$d/in/x.lock"
}

# bats test_tags=lockkind,wait
@test "list: another program's read lock in the wait queue's bytes is shown, among the waiters; check does not count it" {
	need_lockhold
	spawn "$LOCKBOX" mutex "$F" sh -c "$MARK_AND_HOLD" sh "$T/held"
	local holder=$SPAWN_PID
	wait_for test -s "$T/held"
	# a read lock on the join byte (2^32 - 1): every -w is refused at once by it
	lockhold -r "$F" 4294967295 1
	run -0 --separate-stderr "$LOCKBOX" mutex "$F" list
	assert_stderr ""
	assert_line --index 1 --regexp "^1 +$holder +$AGE_RE +sh\$"
	assert_line --index 2 --regexp "^- +$LOCKHOLD_PID +\\? +another program, in the wait queue: lockhold\$"
	run -0 --separate-stderr "$LOCKBOX" mutex --json "$F" list
	# shellcheck disable=SC2016 # python's
	run -0 python3 -c '
import json, sys
v = json.loads(sys.argv[1])
assert len(v) == 2 and v[1]["foreign"] is True and v[1]["in_queue"] is True, v
assert v[1]["pid"] == int(sys.argv[2]) and v[1]["lock"] == "read" and v[1]["start"] == 4294967295, v
print("ok")' "$output" "$LOCKHOLD_PID"
	assert_output ok
	run -0 "$LOCKBOX" mutex "$F" check
	assert_output 1
	run -75 --separate-stderr "$LOCKBOX" mutex -w 60 "$F" true
	assert_stderr_regex "^mutex: $(re_quote "$F"): $(queue_blocked_re read "$F" "$LOCKHOLD_PID" lockhold)\$"
	locks_lines 1 -r -n -o PID,NOTE -p "$LOCKHOLD_PID"
	assert_output "$LOCKHOLD_PID another\\x20program,\\x20in\\x20the\\x20wait\\x20queue"
}

# The bounds below are ratios to one read of /proc/locks taken in the same
# test, so that they hold on a loaded machine; a run that spends its time
# re-reading the table for every file, or walking /proc more than once,
# is many reads over them. 5,000 other locks, not more: CI runs suites
# side by side, and every lock held here makes each of their reads of
# the table longer (bench/locks measures 20,000, alone).

# bats test_tags=lockkind
@test "locks with 5,000 other locks and 200 lock files: one read of /proc/locks, one walk of /proc, within 25 reads' time" {
	need_locks
	need_lockhold
	mkdir "$T/d"
	hold_files "$T/d" 200
	: >"$T/big"
	hold_many "$T/big" 5000
	# and ten of lockbox's own paces, which an instrumented build needs;
	# the best of three tries, each beside its own read, as a busy host
	# may stall any one of them (a run that reads the table for every
	# file is over the bound in all three)
	local took read slack _
	for _ in 1 2 3; do
		one_read
		ms "$LOCKBOX" locks --timeout "$(locks_timeout)"
		took=$MS
		((MS_STATUS == 0))
		one_read
		read=$READ_MS slack=$(($(pace) / 100))
		((took > 25 * read + slack)) || break
	done
	((took <= 25 * read + slack)) || fail "lockbox locks took $took ms, one read of /proc/locks $read ms, 10 paces $slack ms"
	# (the table is read a page at a time while the host's locks change: a
	# line at a page's edge may be missed or repeated, as by any reader; on
	# a busy host, where other runs lock and unlock all along, a few in a
	# hundred)
	# the most rows of three reads
	local rows=0 _
	for _ in 1 2 3; do
		run -0 --separate-stderr "$LOCKBOX" locks --timeout "$(locks_timeout)" -r -n -o PID,SLOT,PATH -l -p "$HOLD_PID"
		((${#lines[@]} <= rows)) || rows=${#lines[@]}
		((rows < 194)) || break
	done
	((rows >= 194 && rows <= 206)) || fail "$rows rows of the 200 lock files"
	assert_line --regexp "^$HOLD_PID 1 $(re_quote "$T/d")/f[0-9]+\.lock\$"
	run -0 --separate-stderr "$LOCKBOX" locks --timeout "$(locks_timeout)" -r -n -o PID,PATH -p "$LOCKHOLD_PID"
	local n
	n=$(grep -c "^$LOCKHOLD_PID $T/big\$" <<<"$output")
	((n >= 4750 && n <= 5250)) || fail "$n lines of the 5,000 locks"
	if command -v strace >/dev/null; then
		ASAN_OPTIONS=detect_leaks=0 run -0 strace -f -e trace=openat -o "$T/trace" "$LOCKBOX" locks --timeout "$(locks_timeout)" -o PID
		run -0 grep -c '"/proc/locks"' "$T/trace"
		assert_output 1
		run -0 grep -c '"/proc", O_RDONLY|O_NONBLOCK|O_CLOEXEC|O_DIRECTORY' "$T/trace"
		assert_output 1
	fi
	# a time bound that the table's read outlasts: what was read, and said so
	run -0 --separate-stderr "$LOCKBOX" locks -J --timeout 1ms
	assert_stderr_regex "^locks: stopped short after 1ms: "
	# shellcheck disable=SC2016 # python's
	run -0 python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["stopped_short"] is True and len(d["locks"]) < 5000, len(d["locks"])
print("ok")' <<<"$output"
	assert_output ok
}

# bats test_tags=lockkind,wait
@test "mutex -w 1 with 5,000 other locks: 75 by its deadline, the holder named; a busy mutex at once; one walk of /proc" {
	need_locks
	need_lockhold
	: >"$T/big"
	hold_many "$T/big" 5000
	local big=$LOCKHOLD_PID
	spawn "$LOCKBOX" mutex "$F" sh -c "$MARK_AND_HOLD" sh "$T/held"
	local holder=$SPAWN_PID
	wait_for test -s "$T/held"
	"$LOCKBOX" mutex "$T/other.lock" create
	lockhold "$T/other.lock" 4096 1
	answers_in 1100 "$LOCKBOX" mutex -w 1 "$F" true
	answers_in 100 "$LOCKBOX" mutex "$F" true
	# another program's lock: named by a walk of /proc, once
	answers_in 1100 "$LOCKBOX" mutex -w 1 "$T/other.lock" true
	run -75 --separate-stderr "$LOCKBOX" mutex -w 1 "$F" true
	assert_stderr_regex "^mutex: $(re_quote "$F"): timed out after 1s; held by PID $holder \\(sh, $AGE_RE\\)\$"
	run -75 --separate-stderr "$LOCKBOX" mutex "$T/other.lock" true
	assert_stderr_regex "$(locked_re mutex "$T/other.lock" "$LOCKHOLD_PID" lockhold)"
	if command -v strace >/dev/null; then
		ASAN_OPTIONS=detect_leaks=0 run -75 strace -f -e trace=openat -o "$T/trace" "$LOCKBOX" mutex -w 1 "$T/other.lock" true
		# (none where the table names the process: a classic POSIX lock)
		(($(grep -c '"/proc", O_RDONLY|O_NONBLOCK|O_CLOEXEC|O_DIRECTORY' "$T/trace") <= 1))
	fi
	kill "$big"
}

# --- a lock's cost is the lock's: the paths a script runs read no table ----

# table_reads TRACE: how many opens of /proc/locks an strace -f log shows
table_reads() {
	grep -c '"/proc/locks"' "$1" || true
}

# walks TRACE: how many listings of /proc (a walk of the processes) it shows
walks() {
	grep -c '"/proc", O_RDONLY|O_NONBLOCK|O_CLOEXEC|O_DIRECTORY' "$1" || true
}

# bats test_tags=lockkind,wait
@test "the paths a script runs never read the kernel's lock table: a run, refusals, check, held, -w and the library" {
	command -v strace >/dev/null || skip "needs strace"
	command -v flock >/dev/null || skip "needs flock(1) (util-linux)"
	local lib t i
	lib=$("$LOCKBOX" --shell-lib)
	printf 'data\n' >"$T/plain"
	# strace -f over each: the counts are of lockbox's own opens
	traced() {
		local status=$1
		shift
		ASAN_OPTIONS=detect_leaks=0 run "-$status" --separate-stderr strace -f -qq -e trace=openat -o "$T/trace" "$@"
	}
	# free: a run, check, held
	traced 0 "$LOCKBOX" mutex "$F" true
	assert_equal "$(table_reads "$T/trace")" 0
	traced 0 "$LOCKBOX" slots "$F" 4 true
	assert_equal "$(table_reads "$T/trace")" 0
	traced 0 "$LOCKBOX" slots "$F" check
	assert_equal "$(table_reads "$T/trace")" 0
	traced 1 "$LOCKBOX" mutex "$F" held
	assert_equal "$(table_reads "$T/trace")" 0
	# held by lockbox: a refusal names the holder from its record, and walks nothing
	spawn "$LOCKBOX" mutex "$F" sh -c "$MARK_AND_HOLD" sh "$T/held"
	local holder=$SPAWN_PID
	wait_for test -s "$T/held"
	for t in "$LOCKBOX mutex $F true" "$LOCKBOX slots $F 1 true" "$LOCKBOX mutex -w 1 $F true"; do
		# shellcheck disable=SC2086 # the words of t
		traced 75 $t
		assert_stderr_regex "held (by PID $holder \\(sh, $AGE_RE\\)|\\(PID $holder\\))\$"
		assert_equal "$t: $(table_reads "$T/trace") $(walks "$T/trace")" "$t: 0 0"
	done
	traced 0 "$LOCKBOX" mutex "$F" check
	assert_output 1
	assert_equal "$(table_reads "$T/trace")" 0
	traced 0 "$LOCKBOX" mutex "$F" held
	assert_equal "$(table_reads "$T/trace")" 0
	# a plain file held by flock(1): named by a look of a few milliseconds, or not
	spawn flock "$T/plain" sh -c "$MARK_AND_HOLD" sh "$T/flock.held"
	wait_for test -s "$T/flock.held"
	track_pid "$(cat "$T/flock.held")"
	traced 75 "$LOCKBOX" mutex "$T/plain" true
	assert_stderr_regex "$(held_re mutex "$T/plain" "$SPAWN_PID" flock)"
	assert_equal "$(table_reads "$T/trace")" 0
	traced 0 "$LOCKBOX" mutex "$T/plain" held
	assert_equal "$(table_reads "$T/trace")" 0
	stop_pid "$SPAWN_PID"
	# the library, both ways: acquire, a refusal, release
	for i in 1 0; do
		# shellcheck disable=SC2016 # expanded by the script's bash
		traced 0 env LOCKBOX_BUILTIN="$i" bash -c '. "$1"; acquire_mutex "$2"; acquire_mutex "$3" || [ $? = 75 ]; release_mutex "$2"' \
			sh "$lib" "$T/lib.lock" "$F"
		assert_equal "builtin $i: $(table_reads "$T/trace")" "builtin $i: 0"
	done
	# a person's look reads it once
	traced 0 "$LOCKBOX" mutex "$F" list
	assert_equal "$(table_reads "$T/trace")" 1
	# cut short under its holder, the file is any file: its count looks
	# through /proc once at most, for the slot's holder and the flock(2)
	# lock's alike (two walks named one and not the other: 2 holders)
	: >"$F"
	traced 0 "$LOCKBOX" mutex "$F" check
	assert_output 1
	assert_equal "$(table_reads "$T/trace")" 0
	assert [ "$(walks "$T/trace")" -le 1 ]
}

# bats test_tags=lockkind,wait
@test "100 idle -w waiters wake at most 100 times in 10 s together, and drain in their queue's order" {
	# (where the pass word cannot be watched, each waiter reads it once a second)
	[[ ${LOCKBOX_TEST_FUTEX-} != off ]] || skip "waiters without a futex watch read the pass word once a second"
	local n=100 i pids=() a b
	spawn "$LOCKBOX" mutex "$F" sh -c "$MARK_AND_HOLD" sh "$T/held"
	local holder=$SPAWN_PID
	wait_for test -s "$T/held"
	for ((i = 1; i <= n; i++)); do
		# shellcheck disable=SC2016 # expanded by the waiter's sh
		"$LOCKBOX" mutex -w 120 "$F" sh -c 'echo "$$" >>"$1"' sh "$T/order" </dev/null 2>>"$T/err" &
		pids+=("$!")
		track_pid "$!"
	done
	wait_for -t 60 waiting_on "$F" "$n"
	# every thread of every waiter: a queue that sleeps wakes only the one
	# behind the head, once a second
	a=$(ctxt_switches "${pids[@]}")
	sleep 10	# the measure's window, not a wait for something to happen
	b=$(ctxt_switches "${pids[@]}")
	echo "# $n idle waiters: $((b - a)) context switches in 10 s" >&3
	(((b - a) <= n)) || fail "$((b - a)) context switches in 10 s"
	# their order, as list shows the queue (a person's look, which a
	# loaded host may cut short at its timeout: looked at again)
	listed() {
		"$LOCKBOX" mutex "$F" list 2>/dev/null | awk 'NR > 1 && /waiting/ { print $2 }' >"$T/queue"
		(($(wc -l <"$T/queue") == n))
	}
	wait_for -t 180 listed
	stop_pid "$holder"
	for i in "${pids[@]}"; do
		reap "$i"
		assert_equal "$REAP_STATUS" 0
	done
	assert_equal "$(paste -sd' ' "$T/order")" "$(paste -sd' ' "$T/queue")"
}
