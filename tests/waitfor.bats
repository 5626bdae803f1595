#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# shellcheck shell=bats
# waitfor: retries COMMAND until it succeeds or TIMEOUT passes, exits with
# the last attempt's status, tells a failed exec from a command's own 127,
# and stops on INT/TERM.

load test_helper

# $ATTEMPT RUNS STATUS...: one attempt. It appends its start time to RUNS
# and exits with the Nth STATUS on its Nth run (the last one after that).
write_attempt() {
	ATTEMPT=$T/attempt
	RUNS=$T/runs
	cat >"$ATTEMPT" <<'EOF'
#!/usr/bin/env bash
runs=$1
shift
printf '%s\n' "${EPOCHREALTIME//[.,]/}" >>"$runs"
n=$(wc -l <"$runs")
((n <= $#)) || n=$#
exit "${!n}"
EOF
	chmod +x "$ATTEMPT"
}

runs() {
	if [[ -e $RUNS ]]; then wc -l <"$RUNS"; else echo 0; fi
}

now_us() {
	printf '%s\n' "${EPOCHREALTIME//[.,]/}"
}

# stderr_line N: line N (from 0; -1 the last) of the last run's stderr.
stderr_line() {
	# shellcheck disable=SC2154 # set by bats' run
	printf '%s\n' "${stderr_lines[$1]}"
}

# --- success and giving up --------------------------------------------

@test "success at the first attempt: 0, one run, no message" {
	write_attempt
	run -0 --separate-stderr "$LOCKBOX" waitfor 1 1 "$ATTEMPT" "$RUNS" 0
	assert_stderr ""
	assert_equal "$output" ""
	assert_equal "$(runs)" 1
}

@test "success after a few failures: 0 at the third attempt" {
	write_attempt
	run -0 --separate-stderr "$LOCKBOX" waitfor 1m 10ms "$ATTEMPT" "$RUNS" 1 75 0 1
	assert_stderr ""
	assert_equal "$(runs)" 3
}

@test "INTERVAL 0 tries again at once" {
	write_attempt
	run -0 --separate-stderr "$LOCKBOX" waitfor 1m 0 "$ATTEMPT" "$RUNS" 1 1 1 1 0
	assert_equal "$(runs)" 5
}

@test "giving up: the last attempt's status, one line" {
	write_attempt
	# attempt N exits N: the status names the attempt it came from
	run --separate-stderr "$LOCKBOX" waitfor 500ms 100ms "$ATTEMPT" "$RUNS" 1 2 3 4 5 6 7 8 9
	local n
	n=$(runs)
	assert [ "$n" -ge 2 ]
	assert_equal "$status" "$n"
	assert_stderr "waitfor: gave up after 500ms ($n attempts); last status $n"
}

@test "giving up with -q: the last status, no message" {
	run -3 --separate-stderr "$LOCKBOX" waitfor -q 300ms 100ms sh -c 'exit 3'
	assert_stderr ""
	run -3 --separate-stderr "$LOCKBOX" waitfor --quiet 0 0 sh -c 'exit 3'
	assert_stderr ""
}

@test "TIMEOUT 0 makes exactly one attempt" {
	write_attempt
	run -4 --separate-stderr "$LOCKBOX" waitfor 0 0 "$ATTEMPT" "$RUNS" 4 0
	assert_stderr "waitfor: gave up after 0ms (1 attempt); last status 4"
	assert_equal "$(runs)" 1
}

@test "a bare TIMEOUT is minutes, a bare INTERVAL seconds, and -v says so" {
	# 0.01 minutes is 600ms; 0.25 seconds is 250ms
	run -1 --separate-stderr "$LOCKBOX" waitfor -v 0.01 0.25 false
	assert_equal "$(stderr_line 0)" "waitfor: TIMEOUT 0.01 = 0.01 minutes (a bare number here is minutes; 0.01s is seconds)"
	assert_equal "$(stderr_line 1)" "waitfor: attempt 1 exited 1; next in 250ms"
	assert_regex "$(stderr_line -1)" '^waitfor: gave up after 600ms \([0-9]+ attempts\); last status 1$'
	# with a unit, nothing to say
	run -1 --separate-stderr "$LOCKBOX" waitfor -v 0.01min 0.25sec false
	assert_equal "$(stderr_line 0)" "waitfor: attempt 1 exited 1; next in 250ms"
	assert_regex "$(stderr_line -1)" '^waitfor: gave up after 600ms \([0-9]+ attempts\); last status 1$'
	# --help says it with an example
	run -0 "$LOCKBOX" waitfor --help
	assert_output --partial "A bare TIMEOUT is minutes (3 = 3 minutes)"
}

@test "sec, min and hr are s, m and h: the units as a user types them" {
	run -1 --separate-stderr "$LOCKBOX" waitfor 0.01min 0 false
	assert_stderr_regex '^waitfor: gave up after 600ms \([0-9]+ attempts?\); last status 1$'
	run -1 --separate-stderr "$LOCKBOX" waitfor 0.5sec 0.1sec false
	assert_stderr_regex '^waitfor: gave up after 500ms \([0-9]+ attempts?\); last status 1$'
	run -1 --separate-stderr "$LOCKBOX" waitfor 0.0001hr 0 false
	assert_stderr_regex '^waitfor: gave up after 360ms \([0-9]+ attempts?\); last status 1$'
	run -1 --separate-stderr "$LOCKBOX" waitfor 0min0.2sec 0 false
	assert_stderr_regex '^waitfor: gave up after 200ms \([0-9]+ attempts?\); last status 1$'
}

@test "timing: 'waitfor 2s 500ms' gives up after 2s, no attempt after the deadline" {
	write_attempt
	local t0 t1 first last p
	p=$(pace)
	t0=$(now_us)
	run -1 --separate-stderr "$LOCKBOX" waitfor 2s 500ms "$ATTEMPT" "$RUNS" 1
	t1=$(now_us)
	p=$(pace "$p")
	echo "# gave up after $(((t1 - t0) / 1000))ms; pace $((p / 1000))ms" >&3
	# attempts at 0, 0.5, 1, 1.5, 2s: five at most, fewer on a loaded machine
	assert [ "$(runs)" -ge 2 ]
	assert [ "$(runs)" -le 5 ]
	assert [ $((t1 - t0)) -ge 2000000 ]
	assert [ $((t1 - t0)) -lt $((2000000 + 500 * p)) ]
	# the last attempt starts at the deadline at the latest (plus the
	# time it takes to start a process)
	first=$(head -n 1 "$RUNS")
	last=$(tail -n 1 "$RUNS")
	assert [ $((last - first)) -le $((2000000 + 100 * p)) ]
	assert_stderr_regex '^waitfor: gave up after 2s \([0-9] attempts\); last status 1$'
}

@test "an attempt running at the deadline is not killed" {
	run -3 --separate-stderr "$LOCKBOX" waitfor 100ms 10ms sh -c 'sleep 0.5; echo finished; exit 3'
	assert_output "finished"
	assert_stderr "waitfor: gave up after 100ms (1 attempt); last status 3"
}

# --- --retry-on ---------------------------------------------------------

@test "--retry-on: another status stops at once, with that status and no message" {
	write_attempt
	run -4 --separate-stderr "$LOCKBOX" waitfor --retry-on 75 1m 10ms "$ATTEMPT" "$RUNS" 75 4 0
	assert_stderr ""
	assert_equal "$(runs)" 2
}

@test "--retry-on LIST: every listed status is retried" {
	write_attempt
	run -0 --separate-stderr "$LOCKBOX" waitfor --retry-on 1,75 1m 10ms "$ATTEMPT" "$RUNS" 1 75 1 0
	assert_equal "$(runs)" 4
	# given twice, the lists add up
	rm "$RUNS"
	run -0 --separate-stderr "$LOCKBOX" waitfor --retry-on 1 --retry-on=75 1m 10ms "$ATTEMPT" "$RUNS" 75 1 0
	assert_equal "$(runs)" 3
}

@test "--retry-on: a killed attempt counts as 128+n" {
	write_attempt
	# shellcheck disable=SC2016 # expanded by the attempt's sh
	run -137 --separate-stderr "$LOCKBOX" waitfor --retry-on 143 1m 10ms sh -c '
		echo x >>"$1"
		if [ "$(wc -l <"$1")" -eq 1 ]; then kill -TERM $$; else kill -KILL $$; fi' sh "$RUNS"
	assert_equal "$(runs)" 2
	assert_stderr ""
}

# --- exec failures --------------------------------------------------------

# bats test_tags=quick
@test "command not found: 127 at once, one line, no retry" {
	local t0 t1
	t0=$(now_us)
	run -127 --separate-stderr "$LOCKBOX" waitfor 1m 30 "$T/nosuch"
	t1=$(now_us)
	assert_stderr "waitfor: cannot run '$T/nosuch': No such file or directory"
	assert_equal "$output" ""
	# a retry would take 30s
	assert [ $((t1 - t0)) -lt 20000000 ]
	run -127 --separate-stderr "$LOCKBOX" waitfor -q 1m 30 lockbox-no-such-command
	assert_stderr "waitfor: cannot run 'lockbox-no-such-command': No such file or directory"
}

# bats test_tags=lockkind
@test "a command that exits 125, 126 or 127 is not retried, unless --retry-on names the status" {
	local code
	for code in 125 126 127; do
		write_attempt
		rm -f "$RUNS"
		# a usage error, a command that cannot run: no attempt can do better
		run "-$code" --separate-stderr "$LOCKBOX" waitfor 1m 10ms "$ATTEMPT" "$RUNS" "$code" 0
		assert_stderr ""
		assert_equal "$(runs)" 1
		rm -f "$RUNS"
		run "-$code" --separate-stderr "$LOCKBOX" waitfor -v 1m 10ms "$ATTEMPT" "$RUNS" "$code" 0
		assert_stderr "waitfor: attempt 1 exited $code; 125, 126 and 127 are retried only when --retry-on names them, stopping"
		# named, they are
		rm -f "$RUNS"
		run -0 --separate-stderr "$LOCKBOX" waitfor --retry-on "1,$code" 1m 10ms "$ATTEMPT" "$RUNS" "$code" "$code" 0
		assert_stderr ""
		assert_equal "$(runs)" 3
	done
	# lockbox-shell(7)'s 'waitfor 3 5 mutex acquire' where the library is not loaded: 125, once
	run -125 --separate-stderr "$LOCKBOX" waitfor 3 5 "$LOCKBOX" mutex acquire
	assert_stderr "mutex: acquire needs --fd FD
Try 'lockbox mutex --help'."
}

# --- killed attempts --------------------------------------------------------

@test "an attempt killed by signal n: 128+n when giving up" {
	run -137 --separate-stderr "$LOCKBOX" waitfor 300ms 100ms sh -c 'kill -KILL $$'
	assert_stderr_regex '^waitfor: gave up after 300ms \([0-9]+ attempts\); last status 137 \(killed by signal 9\)$'
	run -143 --separate-stderr "$LOCKBOX" waitfor 0 0 sh -c 'kill -TERM $$'
	assert_stderr "waitfor: gave up after 0ms (1 attempt); last status 143 (killed by signal 15)"
}

@test "a killed attempt is retried like any failure" {
	write_attempt
	# shellcheck disable=SC2016 # expanded by the attempt's sh
	run -0 --separate-stderr "$LOCKBOX" waitfor 1m 10ms sh -c '
		echo x >>"$1"
		[ "$(wc -l <"$1")" -ge 3 ] || kill -KILL $$' sh "$RUNS"
	assert_equal "$(runs)" 3
}

# --- options, usage -----------------------------------------------------------

# bats test_tags=quick
@test "--help goes to stdout, status 0" {
	local opt
	for opt in --help -h; do
		run -0 --separate-stderr "$LOCKBOX" waitfor "$opt"
		assert_stderr ""
		assert_line --index 0 "usage: waitfor [-qvV] [--retry-on LIST] TIMEOUT INTERVAL [--] COMMAND [ARG...]"
		assert_output --partial "--retry-on LIST"
	done
}

@test "the command's options are its own, and -- may stand before it" {
	run -0 --separate-stderr "$LOCKBOX" waitfor 1 1 echo -v -q --retry-on 1
	assert_output "-v -q --retry-on 1"
	run -0 --separate-stderr "$LOCKBOX" waitfor -q 1 1 -- echo -- -v
	assert_output "-- -v"
	assert_stderr ""
}

# --- -v -----------------------------------------------------------------------

@test "-v: one line per attempt" {
	write_attempt
	run -0 --separate-stderr "$LOCKBOX" waitfor -v 1m 10ms "$ATTEMPT" "$RUNS" 75 3 0
	assert_stderr "waitfor: attempt 1 exited 75; next in 10ms
waitfor: attempt 2 exited 3; next in 10ms
waitfor: attempt 3 succeeded"
	assert_equal "$output" ""
}

@test "-v: out of time, then the give-up line (which -q drops)" {
	run -3 --separate-stderr "$LOCKBOX" waitfor -v 0 5 sh -c 'exit 3'
	assert_stderr "waitfor: attempt 1 exited 3; out of time
waitfor: gave up after 0ms (1 attempt); last status 3"
	run -3 --separate-stderr "$LOCKBOX" waitfor -qv 0 5 sh -c 'exit 3'
	assert_stderr "waitfor: attempt 1 exited 3; out of time"
}

@test "-v: the last sleep is cut to the time left" {
	# 500ms left for the second attempt: room for a loaded machine
	run -1 --separate-stderr "$LOCKBOX" waitfor --verbose 1500ms 1s false
	assert_equal "$(stderr_line 0)" "waitfor: attempt 1 exited 1; next in 1s"
	assert_regex "$(stderr_line 1)" '^waitfor: attempt 2 exited 1; next in [0-9]{1,3}ms$'
	assert_equal "$(stderr_line 2)" "waitfor: attempt 3 exited 1; out of time"
	assert_equal "$(stderr_line 3)" "waitfor: gave up after 1.5s (3 attempts); last status 1"
}

# bats test_tags=privilege
@test "-v: a killed attempt, and a status not to retry" {
	run -137 --separate-stderr "$LOCKBOX" waitfor -v 0 0 sh -c 'kill -KILL $$'
	assert_equal "$(stderr_line 0)" "waitfor: attempt 1 killed by signal 9 (status 137); out of time"
	run -4 --separate-stderr "$LOCKBOX" waitfor -v --retry-on 75 1m 0 sh -c 'exit 4'
	assert_stderr "waitfor: attempt 1 exited 4; not a --retry-on status, stopping"
}

# --- signals ------------------------------------------------------------------

# A prefix that starts a command with SIGINT at its default action, as an
# interactive shell would. A background job starts with SIGINT ignored,
# and so does everything under a suite that was itself started in the
# background; bash cannot undo an ignore it inherited (set -m cannot
# either), perl can.
# shellcheck disable=SC2016 # perl's variables
INT_DEFAULT=(perl -e '$SIG{INT} = "DEFAULT"; exec { $ARGV[0] } @ARGV or die "exec $ARGV[0]: $!\n"')

# The first run records its PID once its traps are set and waits for a
# signal (exiting 42 on TERM, 41 on INT); any later run fails at once, so
# a waitfor that retried after the signal would end with 99.
write_signal_attempt() {
	ATTEMPT=$T/attempt
	RUNS=$T/runs
	cat >"$ATTEMPT" <<'EOF'
#!/bin/sh
echo run >>"$1/runs"
[ "$(wc -l <"$1/runs")" -eq 1 ] || exit 99
trap 'kill "$c" 2>/dev/null; echo TERM >"$1/got"; exit 42' TERM
trap 'kill "$c" 2>/dev/null; echo INT >"$1/got"; exit 41' INT
sleep 30 &
c=$!
echo $$ >"$1/pid.tmp" && mv "$1/pid.tmp" "$1/pid"
wait "$c"
exit 7
EOF
	chmod +x "$ATTEMPT"
}

@test "TERM while an attempt runs: passed on, no further attempt, its status" {
	write_signal_attempt
	spawn "$LOCKBOX" waitfor -v 1m 10ms "$ATTEMPT" "$T"
	wait_for test -s "$T/pid"
	track_pid "$(cat "$T/pid")"
	kill -TERM "$SPAWN_PID"
	reap "$SPAWN_PID"
	assert_equal "$REAP_STATUS" 42
	assert_equal "$(cat "$T/got")" TERM
	assert_equal "$(runs)" 1
	assert_equal "$(cat "$SPAWN_ERR")" "waitfor: attempt 1 exited 42; stopping on signal 15"
}

@test "INT while an attempt runs: passed on, no further attempt, its status" {
	write_signal_attempt
	spawn "${INT_DEFAULT[@]}" "$LOCKBOX" waitfor 1m 10ms "$ATTEMPT" "$T"
	wait_for test -s "$T/pid"
	track_pid "$(cat "$T/pid")"
	kill -INT "$SPAWN_PID"
	reap "$SPAWN_PID"
	assert_equal "$REAP_STATUS" 41
	assert_equal "$(cat "$T/got")" INT
	assert_equal "$(runs)" 1
	assert_equal "$(cat "$SPAWN_ERR")" ""
}

@test "an attempt that succeeds after TERM: 0" {
	# shellcheck disable=SC2016 # expanded by the attempt's sh
	spawn "$LOCKBOX" waitfor 1m 10ms sh -c '
		trap "kill \$c; exit 0" TERM
		sleep 30 & c=$!
		echo $$ >"$1.tmp" && mv "$1.tmp" "$1"
		wait $c; exit 5' sh "$T/pid"
	wait_for test -s "$T/pid"
	track_pid "$(cat "$T/pid")"
	kill -TERM "$SPAWN_PID"
	reap "$SPAWN_PID"
	assert_equal "$REAP_STATUS" 0
}

@test "TERM while sleeping between attempts: killed by TERM at once" {
	local t0 t1
	# shellcheck disable=SC2016 # expanded by the attempt's sh
	spawn_watched "$LOCKBOX" waitfor -v 1m 30 sh -c 'echo x >>"$1"; exit 1' sh "$T/runs"
	RUNS=$T/runs
	wait_for grep -q 'next in 30s' "$SPAWN_ERR"
	t0=$(now_us)
	kill -TERM "$WATCHED_PID"
	reap "$SPAWN_PID"
	t1=$(now_us)
	# killed by it, as the shell that started it must see (FreeBSD lockf does so too)
	assert_equal "$(tail -n 1 "$SPAWN_OUT")" "signal 15"
	assert [ $((t1 - t0)) -lt 10000000 ]
	assert_equal "$(runs)" 1
	assert_equal "$(tail -n 1 "$SPAWN_ERR")" "waitfor: signal 15 while waiting; stopping"
}

@test "INT while an attempt runs that dies of it: waitfor dies of INT too" {
	# shellcheck disable=SC2016 # expanded by the attempt's sh
	spawn_watched "${INT_DEFAULT[@]}" "$LOCKBOX" waitfor 1m 10ms sh -c 'echo $$ >"$1.tmp" && mv "$1.tmp" "$1"; exec sleep 30' sh "$T/pid"
	wait_for test -s "$T/pid"
	track_pid "$(cat "$T/pid")"
	kill -INT "$WATCHED_PID"
	reap "$SPAWN_PID"
	assert_equal "$(tail -n 1 "$SPAWN_OUT")" "signal 2"
}

# bats test_tags=lockkind
@test "each attempt starts with the signal mask and dispositions waitfor got" {
	# in the foreground
	local direct
	direct=$(grep -E '^Sig(Blk|Ign):' /proc/self/status)
	run -0 --separate-stderr "$LOCKBOX" waitfor 0 0 grep -E '^Sig(Blk|Ign):' /proc/self/status
	assert_output "$direct"
	# in the background, where sh starts a job with SIGINT ignored
	spawn grep -E '^Sig(Blk|Ign):' /proc/self/status
	reap "$SPAWN_PID"
	assert_equal "$REAP_STATUS" 0
	direct=$(cat "$SPAWN_OUT")
	spawn "$LOCKBOX" waitfor 0 0 grep -E '^Sig(Blk|Ign):' /proc/self/status
	reap "$SPAWN_PID"
	assert_equal "$REAP_STATUS" 0
	assert_equal "$(cat "$SPAWN_OUT")" "$direct"
}

# --- with mutex -------------------------------------------------------------

# bats test_tags=lockkind
@test "waitfor + mutex: waits while the lock is held, gets it soon after release" {
	mkfifo "$T/fifo"
	# shellcheck disable=SC2016 # expanded by the holder's sh
	spawn "$LOCKBOX" mutex "$F" sh -c 'touch "$1"; read -r line <"$2"' sh "$T/ready" "$T/fifo"
	local holder=$SPAWN_PID t0 t1 p
	wait_for test -e "$T/ready"
	spawn "$LOCKBOX" waitfor -v 20s 200ms "$LOCKBOX" mutex "$F" true
	# it has tried, found the lock held, and tried again
	wait_for grep -q '^waitfor: attempt 2 exited 75; next in 200ms$' "$SPAWN_ERR"
	grep -qF "mutex: $F: held by PID $holder (" "$SPAWN_ERR"
	p=$(pace)
	t0=$(now_us)
	echo go >"$T/fifo"
	reap "$SPAWN_PID"
	assert_equal "$REAP_STATUS" 0
	t1=$(now_us)
	reap "$holder"
	assert_equal "$REAP_STATUS" 0
	p=$(pace "$p")
	echo "# served $(((t1 - t0) / 1000))ms after the release; pace $((p / 1000))ms" >&3
	# within one interval of the release, and the few process starts
	# around it as this machine makes them now
	assert [ $((t1 - t0)) -lt $((200000 + 100 * p)) ]
	assert_regex "$(tail -n 1 "$SPAWN_ERR")" '^waitfor: attempt [0-9]+ succeeded$'
}

# bats test_tags=lockkind
@test "waitfor + mutex: gives up with 75 when the holder outlives the timeout" {
	start_holder_with mutex "$F"
	run -75 --separate-stderr "$LOCKBOX" waitfor 2s 200ms "$LOCKBOX" mutex -q "$F" true
	assert_stderr_regex '^waitfor: gave up after 2s \([0-9]+ attempts\); last status 75$'
	held_is "$F" 1
}
