#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# shellcheck shell=bats
# The maximum hold of slots and mutex on lock files (--max-hold): a
# watcher beside the command, titled for what it is, that keeps nothing
# of the lock while it waits, and past the hold tells the job and gives
# the lock back, whatever the job does; bad input refused before
# anything is taken; the watcher's own death or a signal sent to it told
# to the command. (A server's maximum hold: postgresql.bats, fleet.bats.)

load test_helper
# bats file_tags=lockkind

setup() {
	lockbox_setup
}

# A command that holds on: it writes its PID to $1.pid, then loops; TERM
# (and USR1) are written to $1, and TERM ends it with status 3.
# shellcheck disable=SC2016 # expanded by the command's shell
HOLD_ON='trap '\''echo TERM >"$1.tmp"; mv "$1.tmp" "$1"; exit 3'\'' TERM
trap '\''echo USR1 >"$1.tmp"; mv "$1.tmp" "$1"'\'' USR1
echo $$ >"$1.pid.tmp"; mv "$1.pid.tmp" "$1.pid"
while :; do sleep 0.05; done'

# A command that ignores TERM and holds on: its PID to $1.pid.
# shellcheck disable=SC2016 # expanded by the command's shell
STUCK='trap "" TERM; echo $$ >"$1.pid.tmp"; mv "$1.pid.tmp" "$1.pid"; while :; do sleep 0.05; done'

# watcher_of PID: the max-hold watcher of holder PID, by its title
watcher_of() {
	pgrep -f "^$2: max-hold watcher for PID $1 "
}

# secs_since U0: seconds (a decimal) since U0, an EPOCHREALTIME
secs_since() {
	awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f\n", b - a }'
}

@test "--max-hold: not a duration, 0, or without COMMAND: one line, 125, nothing taken" {
	run -125 --separate-stderr "$LOCKBOX" mutex --max-hold soon "$F" touch "$T/ran"
	assert_stderr "mutex: invalid duration 'soon': expected a number of seconds, or with units (ms s sec m min h hr d) such as 90s, 10min or 1h30m"$'\n'"Try 'lockbox mutex --help'."
	run -125 --separate-stderr "$LOCKBOX" slots --max-hold 0 "$F" 2 touch "$T/ran"
	assert_stderr "slots: invalid maximum hold '0': expected more than 0"$'\n'"Try 'lockbox slots --help'."
	run -125 --separate-stderr "$LOCKBOX" mutex --max-hold 1h "$F" list
	assert_stderr "mutex: --max-hold goes with COMMAND"$'\n'"Try 'lockbox mutex --help'."
	run -125 --separate-stderr "$LOCKBOX" slots acquire --max-hold 1h --fd 0 2
	assert_stderr "slots: --max-hold goes with COMMAND"$'\n'"Try 'lockbox slots --help'."
	assert [ ! -e "$F" ]
	assert [ ! -e "$T/ran" ]
}

@test "--max-hold without open file description locks: refused, nothing taken" {
	! ofd_build || skip "this build has open-file-description locks"
	run -125 --separate-stderr "$LOCKBOX" mutex --max-hold 1h "$F" touch "$T/ran"
	assert_stderr "mutex: $F: --max-hold needs open file description locks, which this build lacks (or -o)"
	assert [ ! -e "$F" ]
	assert [ ! -e "$T/ran" ]
}

# bats test_tags=wait
@test "a holder stopped past its maximum hold: its lock is given back to a waiter, and it is told" {
	need_ofd
	local t0 holder hold
	# (a hold long enough to see the watcher within it: a second, or more
	# of lockbox's paces on a slow machine)
	hold=$(paces_or 30 1)
	((hold < 60)) || hold=59
	t0=$EPOCHREALTIME
	spawn "$LOCKBOX" mutex --max-hold "${hold}s" "$F" sh -c "$HOLD_ON" sh "$T/told"
	holder=$SPAWN_PID
	local holder_err=$SPAWN_ERR
	wait_for test -s "$T/told.pid"
	# titled for what it is and whom it watches (the title is set in the
	# watcher, beside the command's start)
	wait_for watcher_of "$holder" mutex
	kill -STOP "$holder"
	# shellcheck disable=SC2016 # expanded by the waiter's sh
	run -0 --separate-stderr "$LOCKBOX" mutex -w 60 "$F" sh -c 'echo "$LOCKBOX_SLOT"'
	assert_output 1
	# not before the hold
	assert [ "$(secs_since "$t0" | awk -v h="$hold" '{ print ($1 >= h) }')" = 1 ]
	# the watcher's SIGCONT let it run again, to its TERM
	reap "$holder"
	assert_equal "$REAP_STATUS" 3
	assert_equal "$(cat "$T/told")" TERM
	# (the watcher says so after it has signalled: the line may come after the end)
	wait_for grep -q "maximum hold" "$holder_err"
	assert_regex "$(cat "$holder_err")" "^mutex: $(re_quote "$F"): held for its maximum hold, ${hold}s; its lock is given back: sent SIGTERM to PIDs $holder(,[0-9]+)*\$"
}

# bats test_tags=wait
@test "a job that ignores the signal runs on past its maximum hold, without the lock" {
	need_ofd
	# (a hold long enough for the second holder to start within it: two
	# seconds, or more of lockbox's paces on a slow machine)
	spawn "$LOCKBOX" slots --max-hold "$(paces_or 30 2)s" "$F" 2 sh -c "$STUCK" sh "$T/stuck"
	local holder=$SPAWN_PID
	wait_for test -s "$T/stuck.pid"
	start_holder_with slots "$F" 2
	assert_equal "$HOLDER_SLOT" 2
	# its slot, 1, is given back; slot 2's holder keeps its own
	# shellcheck disable=SC2016 # expanded by the waiter's sh
	run -0 "$LOCKBOX" slots -w 60 "$F" 2 sh -c 'echo "$LOCKBOX_SLOT"'
	assert_output 1
	kill -0 "$holder"
	run -0 "$LOCKBOX" slots "$F" check
	assert_output 1
}

# bats test_tags=wait
@test "children that keep the lock after the command has ended are held to the hold too" {
	need_ofd
	local t0
	t0=$EPOCHREALTIME
	# the command leaves a child that ignores TERM and keeps the lock's open file
	# shellcheck disable=SC2016 # expanded by the command's sh
	run -0 "$LOCKBOX" mutex --max-hold 1s "$F" sh -c 'sh -c "$2" sh "$1" </dev/null >/dev/null 2>&1 &
		while [ ! -s "$1.pid" ]; do sleep 0.01; done' \
		sh "$T/child" "$STUCK"
	track_pid "$(cat "$T/child.pid")"
	# the child keeps it, unless the hold has passed already (a slow machine)
	run -0 "$LOCKBOX" mutex "$F" check
	[[ $output == 1 ]] || assert [ "$(secs_since "$t0" | awk '{ print ($1 >= 1) }')" = 1 ]
	run -0 "$LOCKBOX" mutex -w 60 "$F" true
	kill -0 "$(cat "$T/child.pid")"
}

@test "the watcher keeps nothing of the lock: a run right after another's is never refused" {
	need_ofd
	local busy=0
	for _ in $(seq 50); do
		"$LOCKBOX" mutex --max-hold 1h "$F" true
		"$LOCKBOX" mutex "$F" true 2>>"$T/err" || busy=$((busy + 1))
	done
	assert_equal "$busy" 0
	assert [ ! -s "$T/err" ]
}

@test "the watcher killed (SIGKILL): the command gets --on-loss from the kernel; sent TERM: it tells the job and stays" {
	need_ofd
	spawn "$LOCKBOX" mutex --max-hold 1h --on-loss USR1 "$F" sh -c "$HOLD_ON" sh "$T/sig"
	local holder=$SPAWN_PID holder_err=$SPAWN_ERR w
	wait_for test -s "$T/sig.pid"
	w=$(watcher_of "$holder" mutex)
	kill -KILL "$w"
	wait_for test -s "$T/sig"
	assert_equal "$(cat "$T/sig")" USR1
	# the lock is the command's still; nothing was said (nobody could)
	run -0 "$LOCKBOX" mutex "$F" check
	assert_output 1
	assert_equal "$(cat "$holder_err")" ""
	stop_pid "$holder"

	rm -f "$T/sig" "$T/sig.pid"
	spawn "$LOCKBOX" slots --max-hold 1h --on-loss USR1 "$F" 3 sh -c "$HOLD_ON" sh "$T/sig"
	holder=$SPAWN_PID holder_err=$SPAWN_ERR
	wait_for test -s "$T/sig.pid"
	w=$(watcher_of "$holder" slots)
	track_pid "$w"
	kill -TERM "$w"
	wait_for test -s "$T/sig"
	assert_equal "$(cat "$T/sig")" USR1
	# (its shell may say before or after it that its sleep got USR1 too)
	wait_for grep -q "was sent SIGTERM" "$holder_err"
	assert_regex "$(grep "was sent SIGTERM" "$holder_err")" "^slots: $(re_quote "$F"): its max-hold watcher \\(PID $w\\) was sent SIGTERM by PID [0-9]+; the lock is held still: sent SIGUSR1 to PIDs $holder(,[0-9]+)*\$"
	# it stays, and leaves with the command
	kill -0 "$w"
	run -0 "$LOCKBOX" slots "$F" check
	assert_output 1
	stop_pid "$holder"
	wait_for gone "$w"
}

@test "-o --max-hold: mutex keeps the hold itself; the child is told and the lock given back" {
	run -3 --separate-stderr "$LOCKBOX" mutex -o --max-hold 300ms "$F" sh -c "$HOLD_ON" sh "$T/o"
	assert_equal "$(cat "$T/o")" TERM
	# shellcheck disable=SC2154 # set by bats' run
	assert_regex "$stderr" "^mutex: $(re_quote "$F"): held for its maximum hold, 300ms; its lock is given back: sent SIGTERM to PIDs [0-9]+\$"
	run -0 "$LOCKBOX" mutex "$F" check
	assert_output 0
}
