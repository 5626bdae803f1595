#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# shellcheck shell=bats
# mutex: run mode, the busy message naming the holder, -w, -E, -q, check,
# list and --json, acquire/release --fd from bash, and mutex F = slots F 1.

load test_helper
# bats file_tags=lockkind

# json_names LOCKFILE STRING...: list --json shows every STRING, in one run
json_names() {
	local out s
	out=$("$LOCKBOX" mutex --json "$1" list 2>/dev/null) || return 1
	shift
	for s in "$@"; do
		[[ $out == *"$s"* ]] || return 1
	done
}


# hold_sleep APPLET ARG...: `APPLET ARG... sleep 600` in the background,
# once the lock is held; its PID (the sleep's, exec'd in place) in HOLD_PID.
hold_sleep() {
	spawn "$LOCKBOX" "$@" sleep 600
	HOLD_PID=$SPAWN_PID
	wait_for held_is "$F" 1
}

# busy_re PID CMD: the exact busy message, the age as a pattern.
busy_re() {
	printf '^mutex: %s: held by PID %s \\(%s, %s\\)$' "$(re_quote "$F")" "$1" "$(re_quote "$2")" "$AGE_RE"
}

@test "run mode: the command runs in place, holding the lock, with its own status" {
	# shellcheck disable=SC2016 # expanded by the child shell
	run -7 --separate-stderr "$LOCKBOX" mutex "$F" bash -c \
		'echo "slot=$LOCKBOX_SLOT pid=$$"; "$1" mutex "$2" check; exit 7' sh "$LOCKBOX" "$F"
	# shellcheck disable=SC2154 # set by bats' run
	assert_equal "$stderr" ""
	assert_equal "${lines[0]%% *}" "slot=1"
	assert_equal "${lines[1]}" 1
	# no process in between: the command's PID is the one mutex ran as
	run -0 "$LOCKBOX" mutex "$F" check
	assert_output 0
	# shellcheck disable=SC2016 # expanded by the child shell
	run -0 "$LOCKBOX" mutex "$F" sh -c 'echo "$$"; "$1" mutex "$2" list' sh "$LOCKBOX" "$F"
	assert_regex "${lines[2]}" "^1 +${lines[0]} +$AGE_RE +sh\$"
}

@test "busy: 75 at once, the message names the holder's PID, command and age" {
	hold_sleep mutex "$F"
	run -75 --separate-stderr "$LOCKBOX" mutex "$F" touch "$T/ran"
	assert_equal "$output" ""
	assert_regex "$stderr" "$(busy_re "$HOLD_PID" "sleep")"
	assert [ ! -e "$T/ran" ]
	# the command's name, not its arguments; with --record-args, all of it
	spawn "$LOCKBOX" mutex "$T/other" /bin/sleep 599
	wait_for held_is "$T/other" 1
	run -75 --separate-stderr "$LOCKBOX" mutex "$T/other" true
	assert_regex "$stderr" "^mutex: $(re_quote "$T/other"): held by PID $SPAWN_PID \\(sleep, $AGE_RE\\)\$"
	spawn "$LOCKBOX" mutex --record-args "$T/third" /bin/sleep 599
	wait_for held_is "$T/third" 1
	run -75 --separate-stderr "$LOCKBOX" mutex "$T/third" true
	assert_regex "$stderr" "^mutex: $(re_quote "$T/third"): held by PID $SPAWN_PID \\(/bin/sleep 599, $AGE_RE\\)\$"
}

@test "-q: 75 and no message; -E CODE: that status, the message kept" {
	hold_sleep mutex "$F"
	run -75 --separate-stderr "$LOCKBOX" mutex -q "$F" touch "$T/ran"
	assert_equal "$stderr" ""
	# -E 0 makes "busy" a success status; the command still must not run
	run -0 --separate-stderr "$LOCKBOX" mutex -E 0 "$F" touch "$T/ran"
	assert_regex "$stderr" "$(busy_re "$HOLD_PID" "sleep")"
	assert [ ! -e "$T/ran" ]
	run -3 --separate-stderr "$LOCKBOX" mutex -qE 3 "$F" touch "$T/ran"
	assert_equal "$stderr" ""
	assert [ ! -e "$T/ran" ]
	run -125 --separate-stderr "$LOCKBOX" mutex -E 256 "$F" true
	assert_equal "$stderr" "mutex: invalid exit code '256': expected 0 to 255
Try 'lockbox mutex --help'."
}

# bats test_tags=wait
@test "-w times out with 75 and says so, naming the holder" {
	hold_sleep mutex "$F"
	run -75 --separate-stderr "$LOCKBOX" mutex -w 300ms "$F" touch "$T/ran"
	assert_regex "$stderr" "^mutex: $(re_quote "$F"): timed out after 300ms; held by PID $HOLD_PID \\(sleep, $AGE_RE\\)\$"
	run -4 --separate-stderr "$LOCKBOX" mutex -q -w 100ms -E 4 "$F" true
	assert_equal "$stderr" ""
	assert [ ! -e "$T/ran" ]
}

# bats test_tags=wait
@test "-w takes the lock as soon as the holder goes" {
	hold_sleep mutex "$F"
	# shellcheck disable=SC2016 # expanded by the child shell
	spawn "$LOCKBOX" mutex -w 60 "$F" sh -c 'echo "$LOCKBOX_SLOT" >"$1"' sh "$T/ran"
	local waiter=$SPAWN_PID
	need_lockhold
	wait_for waiting_on "$F" 1
	assert [ ! -e "$T/ran" ]
	stop_pid "$HOLD_PID"
	reap "$waiter"
	assert_equal "$REAP_STATUS" 0
	assert_equal "$(cat "$T/ran")" 1
}

# bats test_tags=privilege
@test "check, list and --json while held and after" {
	hold_sleep mutex "$F"
	run -0 --separate-stderr "$LOCKBOX" mutex "$F" check
	assert_output 1
	run -0 --separate-stderr "$LOCKBOX" mutex --json "$F" check
	assert_output "{\"file\":\"$F\",\"held\":1}"
	run -0 --separate-stderr "$LOCKBOX" mutex "$F" list
	assert_equal "${#lines[@]}" 2
	assert_equal "${lines[0]}" "SLOT  PID      AGE     COMMAND"
	assert_regex "${lines[1]}" "^1 +$HOLD_PID +$AGE_RE +sleep\$"
	run -0 --separate-stderr "$LOCKBOX" mutex --json "$F" list
	printf '%s\n' "$output" | valid_json
	assert_regex "$output" "^\\[\\{\"slot\":1,\"pid\":$HOLD_PID,\"uid\":$(id -u),\"age_seconds\":[0-9.]+,\"started\":[0-9]+,\"host\":\"[^\"]*\",\"command\":\"sleep\",\"mode\":\"exclusive\"\\}\\]\$"
	stop_pid "$HOLD_PID"
	run -0 "$LOCKBOX" mutex "$F" check
	assert_output 0
	run -0 "$LOCKBOX" mutex --json "$F" list
	assert_output "[]"
	run -125 --separate-stderr "$LOCKBOX" mutex --json "$F" true
	assert_equal "$stderr" "mutex: --json goes with check or list
Try 'lockbox mutex --help'."
}

@test "acquire --fd and release --fd from bash: the holder is the shell" {
	need_ofd
	cat >"$T/script" <<'EOF'
exec {fd}<>"$1"
"$LOCKBOX" mutex acquire --fd "$fd" || exit
printf 'me %s\n' "$$"
"$LOCKBOX" mutex "$1" list
# a second open file of the same process is another holder: busy
exec {fd2}<>"$1"
"$LOCKBOX" mutex acquire --fd "$fd2" && exit 9
"$LOCKBOX" mutex release --fd "$fd" || exit
"$LOCKBOX" mutex "$1" check
EOF
	run -0 --separate-stderr bash "$T/script" "$F"
	# acquire prints the slot it took
	assert_equal "${lines[0]}" 1
	local me=${lines[1]#me }
	assert_regex "$me" '^[0-9]+$'
	# a shell running a script is named for the script (not its arguments)
	assert_regex "${lines[3]}" "^1 +$me +$AGE_RE +script\$"
	assert_regex "$stderr" "^mutex: $(re_quote "$F"): held by PID $me \\(script, $AGE_RE\\)\$"
	assert_equal "${lines[4]}" 0
	# outside the script, the kernel dropped nothing left behind
	run -0 "$LOCKBOX" mutex "$F" check
	assert_output 0
}

@test "mutex F and slots F 1 exclude each other and list each other's holders" {
	hold_sleep slots "$F" 1
	run -75 --separate-stderr "$LOCKBOX" mutex "$F" touch "$T/ran"
	assert_regex "$stderr" "$(busy_re "$HOLD_PID" "sleep")"
	run -0 "$LOCKBOX" mutex "$F" list
	assert_regex "${lines[1]}" "^1 +$HOLD_PID +$AGE_RE +sleep\$"
	stop_pid "$HOLD_PID"
	hold_sleep mutex "$F"
	run -75 --separate-stderr "$LOCKBOX" slots "$F" 1 touch "$T/ran"
	# slots F 1 is mutex F: the same words
	assert_regex "$stderr" "^slots: $(re_quote "$F"): held by $(named_re "$HOLD_PID" sleep)\$"
	run -0 "$LOCKBOX" slots "$F" list
	assert_regex "${lines[1]}" "^1 +$HOLD_PID +$AGE_RE +sleep\$"
	run -0 "$LOCKBOX" slots "$F" check
	assert_output 1
	# a bigger pool on the same file sees the mutex holder in slot 1
	# shellcheck disable=SC2016 # expanded by the child shell
	run -0 "$LOCKBOX" slots "$F" 2 sh -c 'echo "$LOCKBOX_SLOT"'
	assert_output 2
	assert [ ! -e "$T/ran" ]
}

# bats test_tags=privilege,wait
@test "mutex F -- check runs a command named check" {
	mkdir "$T/bin"
	# shellcheck disable=SC2016 # expanded by the child shell
	printf '#!/bin/sh\necho "ran check $LOCKBOX_SLOT"\nexit 4\n' >"$T/bin/check"
	chmod +x "$T/bin/check"
	PATH=$T/bin:$PATH run -4 --separate-stderr "$LOCKBOX" mutex "$F" -- check
	assert_output "ran check 1"
	# without --, check is the query
	PATH=$T/bin:$PATH run -0 --separate-stderr "$LOCKBOX" mutex "$F" check
	assert_output 0
}

# stopped PID: the process is stopped (state T in /proc/PID/stat).
stopped() {
	[[ $(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) == T ]]
}

# blocked_in_queue LOCKFILE N: N waiters are blocked in the kernel on the
# ticket of the one ahead of them (a "->" line at offset 2^32 or above).
blocked_in_queue() {
	local id
	id=$(lock_id "$1") || return 1
	(($(awk -v id="$id" '$2 == "->" && $7 == id && $8 >= 4294967296 { n++ }
		END { print n + 0 }' /proc/locks) == $2))
}

# bats test_tags=wait,quick
@test "LOCKFILE forgotten or put after COMMAND: one line that says LOCKFILE comes first, 125, nothing made" {
	local w=$T/w
	mkdir -p "$w/bin"
	cd "$w"
	# "mutex sleep 1 F": a file named after a command while COMMAND is not found
	run -125 --separate-stderr "$LOCKBOX" mutex sleep 1 F
	assert_stderr "mutex: sleep: not creating a lock file named after a command while '1' is not found: LOCKFILE comes first (mutex [OPTION...] LOCKFILE COMMAND)"
	assert_output ""
	run -125 --separate-stderr "$LOCKBOX" mutex -w 5 sleep 1 F
	assert_stderr "mutex: sleep: not creating a lock file named after a command while '1' is not found: LOCKFILE comes first (mutex [OPTION...] LOCKFILE COMMAND)"
	run -125 --separate-stderr "$LOCKBOX" slots sleep 2 F
	assert_stderr "slots: sleep: not creating a lock file named after a command while 'F' is not found: LOCKFILE comes first (slots [OPTION...] LOCKFILE MAX COMMAND)"
	# "mutex /usr/bin/rsync -a src dst" with rsync not installed: a directory of PATH
	PATH=$w/bin:$PATH run -125 --separate-stderr "$LOCKBOX" mutex "$w/bin/rsync" -a src dst
	assert_stderr "mutex: $w/bin/rsync: not creating a lock file in $w/bin, a directory of PATH: LOCKFILE comes first (mutex [OPTION...] LOCKFILE COMMAND)"
	PATH=$w/bin:$PATH run -125 --separate-stderr "$LOCKBOX" slots -w 1 "$w/bin/job" 4 true
	assert_stderr "slots: $w/bin/job: not creating a lock file in $w/bin, a directory of PATH: LOCKFILE comes first (slots [OPTION...] LOCKFILE MAX COMMAND)"
	# the same directory by another name
	ln -s bin "$w/bin2"
	PATH=$w/bin2:$PATH run -125 --separate-stderr "$LOCKBOX" mutex "$w/bin/rsync" true
	assert_stderr "mutex: $w/bin/rsync: not creating a lock file in $w/bin, a directory of PATH: LOCKFILE comes first (mutex [OPTION...] LOCKFILE COMMAND)"
	# nothing was left behind
	run -0 ls -A "$w" "$w/bin"
	assert_output "$w:
bin
bin2

$w/bin:"
	# a file there already is locked as before, and a command found runs
	touch "$w/bin/tool"
	PATH=$w/bin:$PATH run -0 --separate-stderr "$LOCKBOX" mutex "$w/bin/tool" true
	run -0 --separate-stderr "$LOCKBOX" mutex sleep true
	assert [ -f "$w/sleep" ]
}

# bats test_tags=wait
@test "a waiter is named by the command it will run, with --record-args its words: list, --json and ps" {
	start_holder_with mutex "$F"
	spawn "$LOCKBOX" mutex -w 60 "$F" touch "$T/ran" --no-such-flag
	local plain=$SPAWN_PID
	wait_for waiting_on "$F" 1
	spawn "$LOCKBOX" mutex --record-args -w 60 "$F" sh -c ': "$@"' sh a 'b c'
	local args=$SPAWN_PID
	wait_for waiting_on "$F" 2
	run -0 "$LOCKBOX" mutex "$F" list
	assert_regex "${lines[2]}" "^- +$plain +$AGE_RE +waiting 1st: touch\$"
	assert_regex "${lines[3]}" "^- +$args +$AGE_RE +waiting 2nd: sh -c : \"\\\$@\" sh a b c\$"
	# (the kernel's table is read a page at a time while a busy host's
	# locks change: a waiter's mark at a page's edge may be missed once)
	wait_for json_names "$F" "\"waiting\":true,\"queue\":1,\"pid\":$plain," \
		",\"command\":\"touch\",\"mode\":\"exclusive\"}" \
		",\"command\":\"sh -c : \\\"\$@\\\" sh a b c\",\"mode\":\"exclusive\"}"
	# ps and /proc show it too: the waiter's command line, while it waits
	run -0 ps -o args= -p "$plain"
	assert_output --regexp "waiting: touch\$"
	# once it holds the lock, -o's supervisor has its own command line back
	stop_pid "$plain"
	stop_pid "$args"
	# shellcheck disable=SC2153 # set by start_holder_with
	stop_pid "$HOLDER_PID"
	start_holder_with mutex "$F"
	spawn "$LOCKBOX" mutex -o -w 60 "$F" sh -c "$HOLD_SCRIPT" sh "$T/o.held"
	local o=$SPAWN_PID
	wait_for waiting_on "$F" 1
	stop_pid "$HOLDER_PID"
	wait_for test -s "$T/o.held"
	run -0 tr '\0' ' ' <"/proc/$o/cmdline"
	assert_output "$LOCKBOX mutex -o -w 60 $F sh -c $HOLD_SCRIPT sh $T/o.held "
}

# bats test_tags=wait
@test "-w waiters are served in arrival order; a stopped one goes to the back, a killed one's place is skipped" {
	hold_sleep mutex "$F"
	local name pids=() i
	# SIGTSTP at its default, whatever the suite was started with, and a
	# process group of their own: the kernel discards a stop signal for a
	# group that no parent in the session watches over (an orphaned one,
	# as a suite started with setsid and no job control runs in)
	# shellcheck disable=SC2016 # perl's variables
	local tstp_default=(perl -e 'setpgrp(0, 0); $SIG{TSTP} = "DEFAULT";
		exec { $ARGV[0] } @ARGV or die "exec: $!\n"')
	for name in A B C D E; do
		# shellcheck disable=SC2016 # expanded by the child shell
		spawn "${tstp_default[@]}" "$LOCKBOX" mutex -w 60 "$F" sh -c 'echo "$1" >>"$2"' sh "$name" "$T/order"
		pids+=("$SPAWN_PID")
		wait_for waiting_on "$F" "${#pids[@]}"
	done
	# everyone behind A waits on the one ahead of it, ^Z handled by then
	wait_for blocked_in_queue "$F" 4
	# B gives its place up as it stops; C dies in its place
	kill -TSTP "${pids[1]}"
	wait_for stopped "${pids[1]}" || {
		echo "# B: $(grep -E '^(State|SigBlk|SigIgn)' "/proc/${pids[1]}/status" 2>/dev/null)" >&3
		cat "$T"/spawn.*.err >&3
		false
	}
	stop_pid "${pids[2]}"
	wait_for eval "(( \$(queue_tickets \"\$F\") == 3 ))"
	assert [ ! -e "$T/order" ]
	stop_pid "$HOLD_PID"
	for i in 0 3 4; do
		reap "${pids[i]}"
		assert_equal "$REAP_STATUS" 0
	done
	assert_equal "$(paste -sd' ' "$T/order")" "A D E"
	# continued, B queues again, at the back
	kill -CONT "${pids[1]}"
	reap "${pids[1]}"
	assert_equal "$REAP_STATUS" 0
	assert_equal "$(paste -sd' ' "$T/order")" "A D E B"
}

# bats test_tags=wait
@test "-w at the head, ^Z: it leaves the queue before it stops, and takes the lock once continued" {
	hold_sleep mutex "$F"
	# shellcheck disable=SC2016 # perl's variables
	spawn perl -e 'setpgrp(0, 0); $SIG{TSTP} = "DEFAULT"; exec { $ARGV[0] } @ARGV or die "exec: $!\n"' \
		"$LOCKBOX" mutex -w 60 "$F" touch "$T/ran"
	local waiter=$SPAWN_PID
	# at the head: its ticket, and its own thread's request on the held slot
	wait_for blocked_on_slot "$F"
	assert_equal "$(queue_tickets "$F")" 1
	kill -TSTP "$waiter"
	wait_for stopped "$waiter"
	# stopped, it holds no place: nobody would wait behind it
	assert_equal "$(queue_tickets "$F")" 0
	kill -CONT "$waiter"
	wait_for blocked_on_slot "$F"
	assert [ ! -e "$T/ran" ]
	stop_pid "$HOLD_PID"
	wait_for test -e "$T/ran"
	reap "$waiter"
	assert_equal "$REAP_STATUS" 0
}

# queue_tickets LOCKFILE: how many tickets are held in its queue (locked
# bytes at offset 2^32 or above, below the waiters' marks at 2^32 + 2^48);
# a head's lock requests on slots are not counted, unlike in lock_waiters.
queue_tickets() {
	local id
	id=$(lock_id "$1") || return 1
	awk -v id="$id" '$2 != "->" && $6 == id && $7 >= 4294967296 && $7 < 281479271677952 { n++ }
		END { print n + 0 }' /proc/locks
}

# blocked_on_slot LOCKFILE: a lock request waits in the kernel for slot 1
# (a "->" line on its byte, offset 4096).
blocked_on_slot() {
	local id
	id=$(lock_id "$1") || return 1
	awk -v id="$id" '$2 == "->" && $7 == id && $8 == 4096 { n++ }
		END { exit n ? 0 : 1 }' /proc/locks
}

# bats test_tags=wait
@test "-w behind a holder that ended unreaped while its child keeps the lock: a lock request, not a spin" {
	need_ofd	# a classic POSIX lock is not inherited: the child would not hold it
	# perl runs the holder and never reaps it: the recorded holder stays a
	# zombie, whose pidfd is readable at once, while its child holds on
	# shellcheck disable=SC2016 # perl's and the child shell's variables
	spawn perl -e 'my $p = fork() // die "fork: $!\n";
		if ($p == 0) { exec { $ARGV[0] } @ARGV or die "exec: $!\n" } sleep 600' \
		"$LOCKBOX" mutex "$F" sh -c 'sleep 600 & echo $! >"$1"; exit 0' sh "$T/child"
	wait_for test -s "$T/child"
	track_pid "$(cat "$T/child")"
	wait_for held_is "$F" 1
	spawn "$LOCKBOX" mutex -w 60 "$F" touch "$T/ran"
	local waiter=$SPAWN_PID
	wait_for blocked_on_slot "$F"
	assert [ ! -e "$T/ran" ]
	kill "$(cat "$T/child")"
	reap "$waiter"
	assert_equal "$REAP_STATUS" 0
	assert [ -e "$T/ran" ]
}

# The sem pattern with a mutex: the shell that took the lock leaves it to
# a job (which inherited the fd) and closes its own copy after a waiter
# has set its watches; the shell, still the recorded holder, lives on. The
# waiter must take the lock as the job ends, not when the shell does.
# bats test_tags=wait
@test "-w: a lock left to a job by the shell that took it is taken as the job ends" {
	need_ofd	# --fd needs open file description locks
	mkfifo "$T/close"
	# shellcheck disable=SC2016 # expanded by the shell under test
	spawn bash -c '
		F=$1 T=$2
		exec 7<>"$F"
		"$LOCKBOX" mutex acquire --fd 7 || exit 1
		sleep 600 &
		echo $! >"$T/job"
		read -r _ <"$T/close"
		exec 7>&-
		: >"$T/closed"
		exec sleep 600' sh "$F" "$T"
	local start took p
	wait_for test -s "$T/job"
	track_pid "$(cat "$T/job")"
	# shellcheck disable=SC2016 # expanded by the child shell
	spawn "$LOCKBOX" mutex -w 20 "$F" sh -c 'date +%s%N >"$1.tmp" && mv "$1.tmp" "$1"' sh "$T/ran"
	local waiter=$SPAWN_PID
	wait_for waiting_on "$F" 1
	echo >"$T/close"
	wait_for test -e "$T/closed"
	run -0 held "$F"
	assert_output 1
	assert [ ! -e "$T/ran" ]
	p=$(pace)
	start=$(date +%s%N)
	stop_pid "$(cat "$T/job")"
	wait_for test -e "$T/ran"
	took=$((($(cat "$T/ran") - start) / 1000000))
	p=$(pace "$p")
	# as the job ends: a few process starts, as this machine makes them now
	((took < 200 * p / 1000)) || fail "the waiter took the lock ${took}ms after the job ended (pace $((p / 1000))ms)"
	reap "$waiter"
	assert_equal "$REAP_STATUS" 0
}

# header_gen LOCKFILE: the header's progress count (u64 at offset 40),
# moved on by every write-locked visit of the header.
header_gen() {
	od -An -tu8 -j40 -N8 "$1" | tr -d ' '
}

# A waiter's futex thread that has decided to ring its bell must never
# ring a later wait's: ^Z cancels it and closes the wait, and the next
# wait (for the header, held here by another process) gets the same fd
# numbers and the same first bell byte. LOCKBOX_TEST_RING_DELAY makes the
# thread wait 2 s between its decision and its write (see wait.c). Two
# slots held: a head waiting for one held slot needs no futex thread (it
# waits for that slot's lock alone), one waiting for several has one.
# bats test_tags=wait
@test "-w: a futex thread cancelled as it rings never grants a later wait its lock" {
	need_ofd	# the count the thread waits on moves at release --fd
	[[ ${LOCKBOX_TEST_FUTEX:-} != off ]] || skip "no futex thread: LOCKBOX_TEST_FUTEX=off"
	need_lockhold
	hold_sleep slots "$F" 2
	spawn "$LOCKBOX" slots "$F" 2 sleep 600
	wait_for held_is "$F" 2
	# The header is held below by a stand-in for as long as the case
	# takes, and a waiter takes a slot without a header that nobody gets
	# through for 1 s (a stopped holder): on a busy machine the case's
	# own steps can take that long. Here the waiter must wait for it.
	# shellcheck disable=SC2016 # perl's variables
	spawn env LOCKBOX_TEST_HEADER_WAIT=60s LOCKBOX_TEST_RING_DELAY="$T/ringing" perl -e 'setpgrp(0, 0);
		$SIG{TSTP} = "DEFAULT"; exec { $ARGV[0] } @ARGV or die "exec: $!\n"' \
		"$LOCKBOX" slots -w 60 "$F" 2 touch "$T/ran"
	local waiter=$SPAWN_PID fd gen
	# the head's watches are set: the futex thread first, then a lock request
	wait_for blocked_on_slot "$F"
	# a release moves the count the thread waits on: it decides to ring
	exec {fd}<>"$F"
	run -0 --separate-stderr "$LOCKBOX" mutex release --fd "$fd"
	exec {fd}>&-
	wait_for test -d "$T/ringing"
	kill -TSTP "$waiter"
	wait_for stopped "$waiter"
	# the header held by another process: continued, the waiter must wait for it
	lockhold "$F" 0 4096
	gen=$(header_gen "$F")
	kill -CONT "$waiter"
	# the thread has rung, and 0.5 s has passed since
	wait_for test ! -d "$T/ringing"
	wait_for header_waited_for "$F" "$gen"
	assert [ ! -e "$T/ran" ]
	# once the header and the lock are free, it takes the lock
	stop_pid "$LOCKHOLD_PID"
	stop_pid "$HOLD_PID"
	reap "$waiter"
	assert_equal "$REAP_STATUS" 0
	assert [ -e "$T/ran" ]
}

# header_waited_for LOCKFILE GEN: a lock request waits in the kernel for
# the header (a "->" line at offset 0), whose count is still GEN; 2 (give
# up) once the count has moved: someone went through the header.
header_waited_for() {
	local id
	[[ $(header_gen "$1") == "$2" ]] || return 2
	id=$(lock_id "$1") || return 1
	awk -v id="$id" '$2 == "->" && $7 == id && $8 == 0 { n++ }
		END { exit n ? 0 : 1 }' /proc/locks
}

# bats test_tags=wait
@test "-w behind a waiter that is stopped (SIGSTOP): passed once the lock is free, the stopped one served when continued" {
	hold_sleep mutex "$F"
	local a b t0 t1 p
	# shellcheck disable=SC2016 # expanded by the child shell
	spawn "$LOCKBOX" mutex -w 60 "$F" sh -c 'echo A >>"$1"' sh "$T/order"
	a=$SPAWN_PID
	wait_for waiting_on "$F" 1
	kill -STOP "$a"
	wait_for stopped "$a"
	# shellcheck disable=SC2016 # expanded by the child shell
	spawn "$LOCKBOX" mutex -w 20 "$F" sh -c 'echo B >>"$1"' sh "$T/order"
	b=$SPAWN_PID
	# B in the queue: behind A, or past it already, its look having found
	# A stopped (then it waits for the holder's slot, not in the queue)
	wait_for waiting_on "$F" 2
	p=$(pace)
	t0=${EPOCHREALTIME/./}
	stop_pid "$HOLD_PID"
	reap "$b"
	t1=${EPOCHREALTIME/./}
	p=$(pace "$p")
	assert_equal "$REAP_STATUS" 0
	# at the next look past the stopped one (once a second) and a few
	# process starts, as this machine makes them now: not at B's deadline
	((t1 - t0 < 1000000 + 200 * p)) || fail "B served $(((t1 - t0) / 1000))ms after the lock came free (pace $((p / 1000))ms)"
	assert_equal "$(paste -sd' ' "$T/order")" "B"
	kill -CONT "$a"
	reap "$a"
	assert_equal "$REAP_STATUS" 0
	assert_equal "$(paste -sd' ' "$T/order")" "B A"
}

# bats test_tags=wait
@test "-w behind running waiters keeps their order; a timeout there names the holder, not the header" {
	hold_sleep mutex "$F"
	local a
	# shellcheck disable=SC2016 # expanded by the child shell
	spawn "$LOCKBOX" mutex -w 60 "$F" sh -c 'echo A >>"$1"' sh "$T/order"
	a=$SPAWN_PID
	wait_for waiting_on "$F" 1
	# behind A, which waits for the holder: the holder kept it
	run -75 --separate-stderr "$LOCKBOX" mutex -w 1500ms "$F" true
	assert_stderr_regex "$(busy_re "$HOLD_PID" sleep | sed 's/held by/timed out after 1\\.5s; held by/')"
	# behind A stopped, with the lock free, timing out before it is passed
	kill -STOP "$a"
	wait_for stopped "$a"
	stop_pid "$HOLD_PID"
	run -75 --separate-stderr "$LOCKBOX" mutex -w 300ms "$F" true
	assert_stderr "mutex: $F: timed out after 300ms; waiting behind PID $a (lockbox, stopped) in the queue"
	kill -CONT "$a"
	reap "$a"
	assert_equal "$REAP_STATUS" 0
	assert_equal "$(cat "$T/order")" A
}

# --- locks that lockbox did not take ----------------------------------------

# bats test_tags=wait
@test "a foreign lockf(3) lock on the whole file is one holder, named, and refuses a run at once with 75" {
	# a run that has ended leaves its record behind
	run -0 "$LOCKBOX" mutex "$F" true
	foreign_lockf ex "$F"
	run -0 --separate-stderr "$LOCKBOX" mutex "$F" check
	assert_output 1
	run -0 --separate-stderr "$LOCKBOX" mutex "$F" list
	assert_equal "${#lines[@]}" 2
	assert_regex "${lines[1]}" "^- +$FOREIGN_PID +\\? +another program: python3\$"
	run -0 --separate-stderr "$LOCKBOX" mutex --json "$F" list
	valid_json <<<"$output"
	assert_output "[{\"slot\":null,\"pid\":$FOREIGN_PID,\"foreign\":true,\"lock\":\"write\",\"start\":0,\"end\":null,\"command\":\"python3\"}]"
	# at once: a lockbox process holding the header would be waited for
	run -75 --separate-stderr at_once "$LOCKBOX" mutex "$F" touch "$T/ran"
	assert_stderr "mutex: $F: locked by another program: PID $FOREIGN_PID (python3)"
	assert [ ! -e "$T/ran" ]
	# a wait waits for it as for any holder, to its own end
	run -75 --separate-stderr at_once "$LOCKBOX" mutex -w 300ms "$F" touch "$T/ran"
	assert_stderr "mutex: $F: timed out after 300ms; locked by another program: PID $FOREIGN_PID (python3)"
	assert [ ! -e "$T/ran" ]
	stop_pid "$FOREIGN_PID"
	run -0 --separate-stderr "$LOCKBOX" mutex "$F" check
	assert_output 0
	run -0 --separate-stderr "$LOCKBOX" mutex "$F" sh -c "$SHOW_SLOT"
	assert_output 1
}

# past_seconds T0 N: N seconds have passed since $SECONDS was T0.
past_seconds() {
	((SECONDS - $1 >= $2))
}

# bats test_tags=wait
@test "-w behind a foreign lockf(3) lock waits past the header's wait and takes the lock as soon as it goes" {
	local t0
	run -0 "$LOCKBOX" mutex "$F" true
	foreign_lockf ex "$F"
	t0=$SECONDS
	# the header's wait for a lockbox holder cut to 200 ms (the tests' knob; 1 s by
	# default): another program's lock is waited for to the deadline, never gone round
	spawn env LOCKBOX_TEST_HEADER_WAIT=200ms "$LOCKBOX" mutex -w 60 "$F" sh -c "$SLOT_TO_FILE" sh "$T/ran"
	local waiter=$SPAWN_PID
	wait_for waiting_on "$F" 1
	# not gone round after it, as a lockbox holder that nobody got through would be
	wait_for past_seconds "$t0" 3
	kill -0 "$waiter"
	assert [ ! -e "$T/ran" ]
	stop_pid "$FOREIGN_PID"
	reap "$waiter"
	assert_equal "$REAP_STATUS" 0
	assert_equal "$(cat "$T/ran")" 1
}
