#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# shellcheck shell=bats
# slots (and mutex, a pool of one): LOCKBOX_SLOT, check and list, busy
# messages, waiting, killed holders, mixed MAX, and --fd from a shell.

load test_helper
# bats file_tags=lockkind

# busy_named PID...: holders of the command sh as "all N slots busy:"
# names them, a regex: the first three with their ages, then "and N more".
busy_named() {
	local out="" pid i=0
	for pid in "$@"; do
		if ((i < 3)); then
			out+="${out:+, }$(named_re "$pid" sh)"
		fi
		i=$((i + 1))
	done
	if ((i > 3)); then
		out+=" and $((i - 3)) more"
	fi
	printf '%s' "$out"
}

# spawn_sleeper APPLET ARG...: a holder whose command is plainly
# `sleep 600`, once `check` shows it; its PID in SLEEPER_PID.
spawn_sleeper() {
	local before
	before=$(held "$F")
	spawn "$LOCKBOX" "$@" sleep 600
	SLEEPER_PID=$SPAWN_PID
	wait_for held_is "$F" $((before + 1))
}

@test "LOCKBOX_SLOT is 1..MAX and distinct while held" {
	local pids=() slots=() i
	for i in 1 2 3 4; do
		start_holder "$F" 4
		pids[HOLDER_SLOT]=$HOLDER_PID
		slots+=("$HOLDER_SLOT")
	done
	assert_equal "$(printf '%s\n' "${slots[@]}" | sort -n | paste -sd' ')" "1 2 3 4"
	run -75 --separate-stderr "$LOCKBOX" slots "$F" 4 touch "$T/ran"
	assert_stderr_regex "^slots: $(re_quote "$F"): all 4 slots busy: $(busy_named "${pids[1]}" "${pids[2]}" "${pids[3]}" "${pids[4]}")\$"
	assert [ ! -e "$T/ran" ]
	# the one slot freed is the one the next caller gets
	stop_pid "${pids[2]}"
	run -0 --separate-stderr "$LOCKBOX" slots "$F" 4 sh -c "$SHOW_SLOT"
	assert_output 2
}

# bats test_tags=quick
@test "check and list while holders run" {
	local pids=() i
	for i in 1 2 3; do
		spawn_sleeper slots "$F" 5
		pids+=("$SLEEPER_PID")
	done
	run -0 --separate-stderr "$LOCKBOX" slots "$F" check
	assert_output 3
	assert_stderr ""
	run -0 --separate-stderr "$LOCKBOX" slots "$F" list
	assert_stderr ""
	assert_equal "${#lines[@]}" 4
	assert_equal "${lines[0]}" "SLOT  PID      AGE     COMMAND"
	for i in 1 2 3; do
		assert_regex "${lines[i]}" "^$i +${pids[i - 1]} +[0-9]+(ms|s|m[0-9]*s?) +sleep\$"
	done
	# mutex sees the same holders
	run -0 "$LOCKBOX" mutex "$F" check
	assert_output 3
	stop_pid "${pids[1]}"
	run -0 "$LOCKBOX" slots "$F" check
	assert_output 2
	run -0 "$LOCKBOX" slots "$F" list
	assert_equal "${#lines[@]}" 3
	assert_regex "${lines[1]}" "^1 +${pids[0]} "
	assert_regex "${lines[2]}" "^3 +${pids[2]} "
}

@test "check and list --json while holders run" {
	local pids=() i
	for i in 1 2; do
		spawn_sleeper slots "$F" 5
		pids+=("$SLEEPER_PID")
	done
	run -0 --separate-stderr "$LOCKBOX" slots --json "$F" check
	assert_output "{\"file\":\"$F\",\"held\":2}"
	run -0 --separate-stderr "$LOCKBOX" slots --json "$F" list
	assert_stderr ""
	assert_equal "${#lines[@]}" 1
	valid_json <<<"$output"
	local json=$output
	if command -v python3 >/dev/null; then
		run -0 python3 -c '
import json, os, socket, sys
v = json.loads(sys.argv[1])
for x in v:
    assert sorted(x) == ["age_seconds", "command", "host", "mode", "pid", "slot", "started", "uid"], x
    assert x["mode"] == "exclusive", x
    assert x["uid"] == os.getuid() and x["host"] == socket.gethostname(), x
    assert x["command"] == "sleep" and 0 <= x["age_seconds"] < 600, x
    assert isinstance(x["started"], int) and x["started"] > 1500000000, x
    print(x["slot"], x["pid"])
' "$json"
		assert_equal "$output" "1 ${pids[0]}"$'\n'"2 ${pids[1]}"
	else
		assert_regex "$json" "^\[\{\"slot\":1,\"pid\":${pids[0]},.*\},\{\"slot\":2,\"pid\":${pids[1]},.*\}\]\$"
	fi
}

# bats test_tags=quick
@test "check and list on a missing file: 0 and no holders, file not created" {
	run -0 --separate-stderr "$LOCKBOX" slots "$F" check
	assert_output 0
	run -0 --separate-stderr "$LOCKBOX" slots "$F" list
	assert_output "SLOT  PID      AGE     COMMAND"
	run -0 --separate-stderr "$LOCKBOX" slots --json "$F" check
	assert_output "{\"file\":\"$F\",\"held\":0}"
	run -0 --separate-stderr "$LOCKBOX" mutex --json "$F" list
	assert_output "[]"
	assert_stderr ""
	assert [ ! -e "$F" ]
}

# bats test_tags=privilege,quick
@test "slots LOCKFILE MAX list: no command of that name, 127, and the form meant; nothing made" {
	local w
	for w in list check held create; do
		run -127 --separate-stderr "$LOCKBOX" slots "$F" 4 "$w"
		assert_stderr "slots: cannot run '$w': No such file or directory ($w takes no MAX: slots LOCKFILE $w)"
		assert_output ""
		assert [ ! -e "$F" ]
	done
	# a command of that name is a command
	mkdir "$T/bin"
	# shellcheck disable=SC2016 # expanded by the command
	printf '#!/bin/sh\necho "listed $LOCKBOX_SLOT"\n' >"$T/bin/list"
	chmod +x "$T/bin/list"
	PATH=$T/bin:$PATH run -0 --separate-stderr "$LOCKBOX" slots "$F" 4 list
	assert_output "listed 1"
}

@test "busy: the message names the holders' PIDs" {
	local a b c
	start_holder "$F" 3
	a=$HOLDER_PID
	start_holder "$F" 3
	b=$HOLDER_PID
	start_holder "$F" 3
	c=$HOLDER_PID
	run -75 --separate-stderr "$LOCKBOX" slots "$F" 3 touch "$T/ran"
	assert_stderr_regex "^slots: $(re_quote "$F"): all 3 slots busy: $(named_re "$a" sh), $(named_re "$b" sh), $(named_re "$c" sh)\$"
	assert_equal "$output" ""
	stop_pid "$b"
	stop_pid "$c"
	run -75 --separate-stderr "$LOCKBOX" slots "$F" 1 touch "$T/ran"
	assert_stderr_regex "^slots: $(re_quote "$F"): held by $(named_re "$a" sh)\$"
	start_holder "$F" 2
	run -75 --separate-stderr "$LOCKBOX" slots "$F" 2 touch "$T/ran"
	assert_stderr_regex "^slots: $(re_quote "$F"): all 2 slots busy: $(named_re "$a" sh), $(named_re "$HOLDER_PID" sh)\$"
	assert [ ! -e "$T/ran" ]
}

# bats test_tags=wait
@test "-q silences the busy message, not the status" {
	start_holder "$F" 1
	run -75 --separate-stderr "$LOCKBOX" slots -q "$F" 1 touch "$T/ran"
	assert_stderr ""
	run -75 --separate-stderr "$LOCKBOX" slots --quiet -w 100ms "$F" 1 touch "$T/ran"
	assert_stderr ""
	run -75 --separate-stderr "$LOCKBOX" mutex -q "$F" touch "$T/ran"
	assert_stderr ""
	assert [ ! -e "$T/ran" ]
}

@test "-v says which slot was taken, on stderr" {
	start_holder "$F" 4
	run -0 --separate-stderr "$LOCKBOX" slots -v "$F" 4 sh -c "$SAY_SLOT"
	assert_stderr "slots: $F: took slot 2 of 4"
	assert_output "slot 2"
	run -0 --separate-stderr "$LOCKBOX" slots --verbose "$F" 4 true
	assert_stderr "slots: $F: took slot 2 of 4"
}

@test "busy names at most three holders, with their commands and ages, and counts the rest" {
	local pids=() i
	for i in 1 2 3 4 5; do
		start_holder "$F" 5
		pids+=("$HOLDER_PID")
	done
	run -75 --separate-stderr "$LOCKBOX" slots "$F" 5 true
	assert_stderr_regex "^slots: $(re_quote "$F"): all 5 slots busy: $(named_re "${pids[0]}" sh), $(named_re "${pids[1]}" sh), $(named_re "${pids[2]}" sh) and 2 more\$"
	run -75 --separate-stderr "$LOCKBOX" slots "$F" 4 true
	assert_stderr_regex "^slots: $(re_quote "$F"): all 4 slots busy: .* and 2 more\$"
}

# bats test_tags=wait
@test "-E CODE with a wait that times out" {
	start_holder "$F" 1
	run -7 --separate-stderr "$LOCKBOX" slots -E 7 -w 200ms "$F" 1 touch "$T/ran"
	assert_stderr_regex "^slots: $(re_quote "$F"): timed out after 200ms; held by $(named_re "$HOLDER_PID" sh)\$"
	run -0 --separate-stderr "$LOCKBOX" slots -qE 0 -w 100ms "$F" 1 touch "$T/ran"
	assert_stderr ""
	assert [ ! -e "$T/ran" ]
}

# bats test_tags=wait
@test "-w waits and takes the slot a holder frees" {
	start_holder "$F" 1
	local holder=$HOLDER_PID
	spawn "$LOCKBOX" slots -w 60 "$F" 1 sh -c "$SLOT_TO_FILE" sh "$T/waiter.ran"
	local waiter=$SPAWN_PID
	# the waiter is blocked in the kernel on the held slot
	wait_for waiting_on "$F" 1
	assert [ ! -e "$T/waiter.ran" ]
	kill -TERM "$holder"
	wait_for test -s "$T/waiter.ran"
	reap "$waiter"
	assert_equal "$REAP_STATUS" 0
	assert_equal "$(cat "$T/waiter.ran")" 1
	run -0 held "$F"
	assert_output 0
}

# bats test_tags=wait
@test "a pool drains: mutex -w inf FILE true returns once every slot is free, as sem --wait does" {
	start_holder "$F" 3
	local one=$HOLDER_PID
	start_holder "$F" 3
	local two=$HOLDER_PID
	spawn "$LOCKBOX" mutex -w inf "$F" touch "$T/drained"
	local drain=$SPAWN_PID
	wait_for waiting_on "$F" 1
	# one holder gone, one left: still waiting, in the queue
	stop_pid "$one"
	wait_for held_is "$F" 1
	run -0 "$LOCKBOX" slots "$F" list
	assert_line --regexp "^- +$drain +"
	assert [ ! -e "$T/drained" ]
	stop_pid "$two"
	wait_for test -e "$T/drained"
	reap "$drain"
	assert_equal "$REAP_STATUS" 0
	# the same with slots and a MAX of 1
	start_holder "$F" 3
	spawn "$LOCKBOX" slots -w inf "$F" 1 touch "$T/drained.2"
	wait_for waiting_on "$F" 1
	stop_pid "$HOLDER_PID"
	wait_for test -e "$T/drained.2"
}

# age_of LOCKFILE PID: the age in seconds list --json gives PID's slot
age_of() {
	"$LOCKBOX" slots --json "$1" list |
		grep -o "\"pid\":$2,\"uid\":[0-9]*,\"age_seconds\":[0-9.]*" | sed 's/.*://'
}

# older_than LOCKFILE PID SECONDS
older_than() {
	local age
	age=$(age_of "$1" "$2")
	[[ -n $age ]] && awk -v a="$age" -v s="$3" 'BEGIN { exit !(a >= s) }'
}

# bats test_tags=wait
@test "-w: a waiter's age in list counts from when it took the slot, not from when it began to wait" {
	start_holder "$F" 1
	local holder=$HOLDER_PID age t0 t1
	HOLDERS=$((HOLDERS + 1))
	# a deadline past the two bounded waits below, however slow they are
	# on a busy machine: the handoff is bounded by the third, not by it
	local ts=${EPOCHREALTIME/./}
	spawn "$LOCKBOX" slots -w 120 "$F" 1 sh -c "$HOLD_SCRIPT" sh "$T/holder.$HOLDERS"
	local waiter=$SPAWN_PID
	wait_for waiting_on "$F" 1
	# the waiter has waited 2s at least once the holder is 2s older than now
	age=$(age_of "$F" "$holder")
	wait_for older_than "$F" "$holder" "$(awk -v a="$age" 'BEGIN { print a + 2 }')"
	t0=${EPOCHREALTIME/./}
	echo "# the holder killed $(((t0 - ts) / 1000))ms after the waiter started" >&3
	kill -TERM "$holder"
	wait_for holder_ready "$T/holder.$HOLDERS" "$waiter"
	age=$(age_of "$F" "$waiter")
	t1=${EPOCHREALTIME/./}
	echo "# age ${age}s, $(((t1 - t0) / 1000))ms after the holder was killed" >&3
	assert [ -n "$age" ]
	# it took the slot after the kill: its age is within the time since
	# then, however slow the machine; counted from when it began to wait,
	# it would be 2s more (the half of that is the margin)
	awk -v a="$age" -v s="$(((t1 - t0) / 1000))" 'BEGIN { exit !(a * 1000 < s + 1000) }'
}

# bats test_tags=wait
@test "-w times out with 75 and the timed-out message" {
	local a b t0 t1
	start_holder "$F" 2
	a=$HOLDER_PID
	start_holder "$F" 2
	b=$HOLDER_PID
	t0=${EPOCHREALTIME/./}
	run -75 --separate-stderr "$LOCKBOX" slots -w 500ms "$F" 2 touch "$T/ran"
	t1=${EPOCHREALTIME/./}
	assert_stderr_regex "^slots: $(re_quote "$F"): timed out after 500ms; all 2 slots busy: $(named_re "$a" sh), $(named_re "$b" sh)\$"
	# it did wait, and gave up at the deadline rather than hanging
	assert [ $((t1 - t0)) -ge 490000 ]
	assert [ $((t1 - t0)) -lt 20000000 ]
	run -75 --separate-stderr "$LOCKBOX" slots --wait 1 "$F" 2 touch "$T/ran"
	assert_stderr_regex "^slots: $(re_quote "$F"): timed out after 1s; all 2 slots busy: $(named_re "$a" sh), $(named_re "$b" sh)\$"
	assert [ ! -e "$T/ran" ]
}

@test "SIGKILL of a holder frees its slot at once" {
	local pids=() slot=() i
	for i in 1 2 3; do
		start_holder "$F" 3
		pids+=("$HOLDER_PID")
		slot+=("$HOLDER_SLOT")
	done
	kill -KILL "${pids[1]}"
	reap "${pids[1]}"
	assert_equal "$REAP_STATUS" 137
	# no polling: the kernel dropped the lock before the holder was reaped
	run -0 held "$F"
	assert_output 2
	run -0 --separate-stderr "$LOCKBOX" slots "$F" 3 sh -c "$SHOW_SLOT"
	assert_output "${slot[1]}"
}

# bats test_tags=wait
@test "a waiter takes the slot of a SIGKILLed holder" {
	local a b
	start_holder "$F" 2
	a=$HOLDER_PID
	start_holder "$F" 2
	b=$HOLDER_PID
	local slot_b=$HOLDER_SLOT
	spawn "$LOCKBOX" slots -w 60 "$F" 2 sh -c "$SLOT_TO_FILE" sh "$T/waiter.ran"
	local waiter=$SPAWN_PID
	wait_for waiting_on "$F" 1
	assert [ ! -e "$T/waiter.ran" ]
	kill -KILL "$b"
	wait_for test -s "$T/waiter.ran"
	reap "$waiter"
	assert_equal "$REAP_STATUS" 0
	assert_equal "$(cat "$T/waiter.ran")" "$slot_b"
	run -0 held "$F"
	assert_output 1
	run -75 --separate-stderr "$LOCKBOX" slots "$F" 1 true
	assert_stderr_regex "^slots: $(re_quote "$F"): held by $(named_re "$a" sh)\$"
}

@test "the count stays right when callers use different MAX on one file" {
	local pids=() i
	for i in 1 2 3; do
		start_holder "$F" 5
		pids+=("$HOLDER_PID")
	done
	run -75 --separate-stderr "$LOCKBOX" slots "$F" 2 touch "$T/ran"
	assert_stderr_regex "^slots: $(re_quote "$F"): all 2 slots busy: $(busy_named "${pids[@]}")\$"
	run -75 --separate-stderr "$LOCKBOX" slots "$F" 3 touch "$T/ran"
	assert_stderr_regex "^slots: $(re_quote "$F"): all 3 slots busy: $(busy_named "${pids[@]}")\$"
	run -75 --separate-stderr "$LOCKBOX" mutex "$F" touch "$T/ran"
	assert [ ! -e "$T/ran" ]
	run -0 --separate-stderr "$LOCKBOX" slots "$F" 4 sh -c "$SHOW_SLOT"
	assert_output 4
	# a holder at MAX 4 fills the pool for MAX 4 but not for MAX 5
	start_holder "$F" 4
	assert_equal "$HOLDER_SLOT" 4
	run -75 "$LOCKBOX" slots "$F" 4 true
	run -0 "$LOCKBOX" slots "$F" 5 sh -c "$SHOW_SLOT"
	assert_output 5
}

@test "a shrunk MAX counts holders, not slot numbers" {
	local pids=() i
	for i in 1 2 3 4 5; do
		start_holder "$F" 5
		pids[HOLDER_SLOT]=$HOLDER_PID
	done
	stop_pid "${pids[1]}"
	stop_pid "${pids[2]}"
	stop_pid "${pids[3]}"
	# slots 4 and 5 held: two holders, whatever their numbers
	run -75 --separate-stderr "$LOCKBOX" slots "$F" 2 touch "$T/ran"
	assert_stderr_regex "^slots: $(re_quote "$F"): all 2 slots busy: $(busy_named "${pids[4]}" "${pids[5]}")\$"
	assert [ ! -e "$T/ran" ]
	run -0 "$LOCKBOX" slots "$F" 3 sh -c "$SHOW_SLOT"
	assert_output 1
	start_holder "$F" 3
	assert_equal "$HOLDER_SLOT" 1
	run -75 "$LOCKBOX" slots "$F" 3 true
	run -0 held "$F"
	assert_output 3
}

@test "a background child of the command keeps the slot (OFD)" {
	need_ofd
	run -0 --separate-stderr "$LOCKBOX" slots "$F" 1 sh -c 'sleep 600 </dev/null >/dev/null 2>&1 3>&- & echo "$!"'
	local child=$output
	track_pid "$child"
	run -0 held "$F"
	assert_output 1
	run -75 --separate-stderr "$LOCKBOX" slots "$F" 1 touch "$T/ran"
	assert [ ! -e "$T/ran" ]
	kill -KILL "$child"
	wait_for held_is "$F" 0
	run -0 "$LOCKBOX" slots "$F" 1 true
}

@test "the command opening and closing the lock file does not drop its slot (OFD)" {
	need_ofd
	# shellcheck disable=SC2016 # for the holder's sh
	spawn "$LOCKBOX" slots "$F" 1 sh -c '
		: <"$1"
		exec 7<"$1"
		exec 7<&-
		exec 8<>"$1"
		exec 8>&-
		touch "$2"
		exec sleep 600' sh "$F" "$T/closed"
	wait_for test -e "$T/closed"
	run -0 held "$F"
	assert_output 1
	run -75 --separate-stderr "$LOCKBOX" slots "$F" 1 touch "$T/ran"
	assert_stderr_regex "^slots: $(re_quote "$F"): held by $(named_re "$SPAWN_PID" sh)\$"
	assert [ ! -e "$T/ran" ]
}

@test "acquire --fd and release --fd from bash" {
	need_ofd
	local fd fd2 fd3 slot
	exec {fd}<>"$F"
	# the helper exits; the lock stays with this shell's open file
	slot=$("$LOCKBOX" slots acquire --fd "$fd" 2)
	assert_equal "$slot" 1
	run -0 held "$F"
	assert_output 1
	# a second acquire elsewhere sees it
	run -75 --separate-stderr "$LOCKBOX" slots "$F" 1 touch "$T/ran"
	assert [ ! -e "$T/ran" ]
	run -0 --separate-stderr "$LOCKBOX" slots "$F" 2 sh -c "$SHOW_SLOT"
	assert_output 2
	exec {fd2}<>"$F"
	"$LOCKBOX" slots acquire --fd "$fd2" 2 >"$T/slot2"
	assert_equal "$(cat "$T/slot2")" 2
	# the holder recorded is the caller, the helper's parent
	run -0 "$LOCKBOX" slots "$F" list
	assert_regex "${lines[2]}" "^2 +$BASHPID "
	exec {fd3}<>"$F"
	run -75 --separate-stderr "$LOCKBOX" slots acquire --fd "$fd3" 2
	assert_output ""
	# messages name the file the fd is open on
	assert_stderr_regex "^slots: $(re_quote "$F"): all 2 slots busy: PID [0-9]+ \\([^)]*\\), PID $BASHPID \\([^)]*\\)\$"
	# release frees it
	run -0 --separate-stderr "$LOCKBOX" slots release --fd "$fd"
	assert_stderr ""
	assert_output ""
	run -0 held "$F"
	assert_output 1
	run -0 --separate-stderr "$LOCKBOX" slots acquire --fd "$fd3" 2
	assert_output 1
	run -0 "$LOCKBOX" slots release --fd "$fd3"
	run -0 "$LOCKBOX" slots release --fd "$fd2"
	run -0 held "$F"
	assert_output 0
	# releasing what is not held is harmless
	run -0 --separate-stderr "$LOCKBOX" slots release --fd "$fd"
	exec {fd}>&- {fd2}>&- {fd3}>&-
}

@test "mutex acquire --fd and release --fd from bash" {
	need_ofd
	local fd fd2
	exec {fd}<>"$F" {fd2}<>"$F"
	run -0 --separate-stderr "$LOCKBOX" mutex acquire --fd "$fd"
	assert_output 1
	run -75 --separate-stderr "$LOCKBOX" mutex acquire --fd "$fd2"
	assert_output ""
	run -75 --separate-stderr "$LOCKBOX" mutex "$F" touch "$T/ran"
	assert [ ! -e "$T/ran" ]
	run -0 "$LOCKBOX" mutex release --fd "$fd"
	run -0 --separate-stderr "$LOCKBOX" mutex "$F" true
	exec {fd}>&- {fd2}>&-
}

@test "acquire again on an fd that holds a slot reports that slot and takes no other" {
	need_ofd
	local fd fd2
	exec {fd}<>"$F" {fd2}<>"$F"
	run -0 --separate-stderr "$LOCKBOX" slots acquire --fd "$fd" 3
	assert_output 1
	run -0 --separate-stderr "$LOCKBOX" slots acquire -v --fd "$fd" 3
	assert_output 1
	assert_stderr "slots: $F: holds slot 1 already"
	run -0 held "$F"
	assert_output 1
	run -0 --separate-stderr "$LOCKBOX" mutex acquire --fd "$fd"
	assert_output 1
	# another open file of the same shell is another holder
	run -0 --separate-stderr "$LOCKBOX" slots acquire --fd "$fd2" 3
	assert_output 2
	run -125 --separate-stderr "$LOCKBOX" mutex acquire --fd "$fd2"
	assert_stderr "mutex: $F: fd $fd2 holds slot 2 already, not the mutex's slot 1; release it first"
	run -0 held "$F"
	assert_output 2
	run -0 "$LOCKBOX" slots release --fd "$fd"
	run -0 "$LOCKBOX" slots release --fd "$fd2"
	exec {fd}>&- {fd2}>&-
}

@test "acquire -E 0 when busy prints no slot (it took none)" {
	need_ofd
	start_holder "$F" 1
	local fd
	exec {fd}<>"$F"
	run -0 --separate-stderr "$LOCKBOX" slots acquire -E 0 --fd "$fd" 1
	assert_stderr_regex "^slots: $(re_quote "$F"): held by $(named_re "$HOLDER_PID" sh)\$"
	assert_output ""
	exec {fd}>&-
}

# bats test_tags=quick
@test "acquire --fd refuses a read-only fd, a bad fd, a foreign file" {
	need_ofd
	local ro other before
	printf 'precious\n' >"$T/other"
	before=$(sha "$T/other")
	exec {ro}<"$T/other"
	run -125 --separate-stderr "$LOCKBOX" slots acquire --fd "$ro" 2
	assert_stderr "slots: $T/other: not open for writing"
	assert_output ""
	exec {ro}<&-
	: >"$F"
	exec {ro}<"$F"
	run -125 --separate-stderr "$LOCKBOX" slots acquire --fd "$ro" 2
	assert_stderr "slots: $F: not open for writing"
	exec {ro}<&-
	run -125 --separate-stderr "$LOCKBOX" slots acquire --fd 987 2
	assert_stderr "slots: fd 987: Bad file descriptor"
	exec {other}<>"$T/other"
	run -125 --separate-stderr "$LOCKBOX" slots acquire --fd "$other" 2
	assert_stderr "slots: $T/other: not a lockbox lock file; refusing to touch it (give the lock a path of its own: lockbox creates it)"
	run -125 --separate-stderr "$LOCKBOX" slots release --fd "$other"
	assert_stderr "slots: $T/other: not a lockbox lock file; refusing to touch it"
	exec {other}>&-
	assert_equal "$(sha "$T/other")" "$before"
}

# bats test_tags=quick
@test "--fd on a classic POSIX lock build: refused with 125" {
	if ofd_build; then
		skip "this build has open-file-description locks"
	fi
	local fd
	exec {fd}<>"$F"
	run -125 --separate-stderr "$LOCKBOX" slots acquire --fd "$fd" 2
	assert_stderr "slots: $F: --fd needs open file description locks, which this build lacks"
	assert_output ""
	run -125 --separate-stderr "$LOCKBOX" mutex release --fd "$fd"
	assert_stderr "mutex: $F: --fd needs open file description locks, which this build lacks"
	exec {fd}>&-
}

@test "mutex and slots F 1 exclude each other and list each other's holders" {
	spawn_sleeper mutex "$F"
	local m=$SLEEPER_PID
	run -75 --separate-stderr "$LOCKBOX" slots "$F" 1 touch "$T/ran"
	assert_stderr_regex "^slots: $(re_quote "$F"): held by $(named_re "$m" sleep)\$"
	run -0 "$LOCKBOX" slots "$F" list
	assert_regex "${lines[1]}" "^1 +$m +$AGE_RE +sleep\$"
	stop_pid "$m"
	spawn_sleeper slots "$F" 1
	local s=$SLEEPER_PID
	run -75 --separate-stderr "$LOCKBOX" mutex "$F" touch "$T/ran"
	assert_stderr_regex "^mutex: $(re_quote "$F"): held by PID $s \\(sleep, $AGE_RE\\)\$"
	run -0 "$LOCKBOX" mutex "$F" list
	assert_regex "${lines[1]}" "^1 +$s +$AGE_RE +sleep\$"
	run -0 "$LOCKBOX" mutex "$F" check
	assert_output 1
	assert [ ! -e "$T/ran" ]
	# a pool of two still has room beside the mutex holder
	run -0 "$LOCKBOX" slots "$F" 2 sh -c "$SHOW_SLOT"
	assert_output 2
}

# bats test_tags=wait
@test "mutex busy message names the holder's PID, command and age" {
	spawn_sleeper mutex "$F"
	local m=$SLEEPER_PID f
	f=$(re_quote "$F")
	run -75 --separate-stderr "$LOCKBOX" mutex "$F" touch "$T/ran"
	assert_stderr_regex "^mutex: $f: held by PID $m \\(sleep, $AGE_RE\\)\$"
	run -75 --separate-stderr "$LOCKBOX" mutex -w 300ms "$F" touch "$T/ran"
	assert_stderr_regex "^mutex: $f: timed out after 300ms; held by PID $m \\(sleep, $AGE_RE\\)\$"
	assert [ ! -e "$T/ran" ]
}

# bats test_tags=privilege
@test "mutex runs a command named check after --" {
	# (in a directory of its own: a lock file is never made in one of PATH's)
	mkdir "$T/bin"
	printf '#!/bin/sh\necho "my check ran"\n' >"$T/bin/check"
	chmod +x "$T/bin/check"
	PATH=$T/bin:$PATH run -0 --separate-stderr "$LOCKBOX" mutex "$F" -- check
	assert_output "my check ran"
	run -0 --separate-stderr "$LOCKBOX" mutex "$F" check
	assert_output 0
}

# hold_many LOCKFILE COUNT: a bash that holds COUNT slots of a pool of COUNT
# (acquire --fd, one open file each) and touches $T/many.ready; a line
# written to the FIFO $T/many.go makes it release its first slot with
# release --fd and live on. Its PID in MANY_PID.
hold_many() {
	mkfifo "$T/many.go"
	cat >"$T/many" <<EOF
#!$BASH
set -e
ulimit -n $(($2 + 64)) 2>/dev/null || { echo "cannot open $2 files" >&2; exit 3; }
fds=()
# the filler is not what is tested: no leak check at each of its exits,
# which would make a sanitizer build's fill many times slower
export ASAN_OPTIONS=\${ASAN_OPTIONS:+\$ASAN_OPTIONS:}detect_leaks=0
for ((i = 0; i < $2; i++)); do
	exec {fd}<>"$1"
	"$LOCKBOX" slots acquire --fd "\$fd" $2 >/dev/null
	fds+=("\$fd")
done
touch "$T/many.ready"
read -r _ <"$T/many.go"
"$LOCKBOX" slots release --fd "\${fds[0]}"
exec sleep 600
EOF
	spawn "$BASH" "$T/many"
	MANY_PID=$SPAWN_PID
	# one acquire --fd a slot: slow under sanitizers on a loaded machine
	wait_for -t 600 many_ready
}

many_ready() {
	[[ -e $T/many.ready ]] && return 0
	kill -0 "$MANY_PID" 2>/dev/null || return 2
	return 1
}

# bats test_tags=wait
@test "-w on a pool of 1,100 all held: a few threads, no CPU, and the slot a release --fd frees" {
	need_ofd
	hold_many "$F" 1100
	run -0 held "$F"
	assert_output 1100
	# locks of another file come and go meanwhile (one process, no forks),
	# shifting the kernel's table under a reader: the count stays exact
	: >"$T/other"
	# shellcheck disable=SC2016 # perl's variables, not the shell's
	spawn perl -e 'open(my $f, "<", $ARGV[0]) or die;
		for (;;) { flock($f, 1); flock($f, 8); select(undef, undef, undef, 0.0002) }' "$T/other"
	local churn=$SPAWN_PID i counts=()
	for ((i = 0; i < 40; i++)); do
		counts+=("$(held "$F")")
	done
	stop_pid "$churn"
	assert_equal "${counts[*]}" "$(printf '1100 %.0s' {1..40} | sed 's/ $//')"
	spawn "$LOCKBOX" slots -w 120 "$F" 1100 sh -c "$SLOT_TO_FILE" sh "$T/waiter.ran"
	local waiter=$SPAWN_PID threads ticks
	wait_for waiting_on "$F" 1
	threads=$(awk '$1 == "Threads:" { print $2 }' "/proc/$waiter/status")
	echo "# waiter threads: $threads" >&3
	assert [ "$threads" -le 4 ]
	# utime + stime in clock ticks: it sleeps in the kernel, not in a loop
	ticks=$(awk '{ print $14 + $15 }' "/proc/$waiter/stat")
	assert [ "$ticks" -le 50 ]
	assert [ ! -e "$T/waiter.ran" ]
	echo >"$T/many.go"
	wait_for test -s "$T/waiter.ran"
	reap "$waiter"
	assert_equal "$REAP_STATUS" 0
	assert_equal "$(cat "$T/waiter.ran")" 1
}

# closing LOCKFILE COUNT: a bash that holds COUNT slots of a pool of COUNT
# (acquire --fd, one open file each) and touches $T/closing.0; each number
# N then written to the FIFO $T/closing.go makes it close N more of those
# fds without release (the records stay, the locks go) and touch
# $T/closing.TOTAL.
closing() {
	mkfifo "$T/closing.go"
	cat >"$T/closing" <<EOF2
#!$BASH
set -e
ulimit -n $(($2 + 64)) 2>/dev/null || { echo "cannot open $2 files" >&2; exit 3; }
export ASAN_OPTIONS=\${ASAN_OPTIONS:+\$ASAN_OPTIONS:}detect_leaks=0
fds=()
for ((i = 0; i < $2; i++)); do
	exec {fd}<>"$1"
	"$LOCKBOX" slots acquire --fd "\$fd" $2 >/dev/null
	fds+=("\$fd")
done
done=0
touch "$T/closing.0"
exec {go}<>"$T/closing.go"
while read -r n <&"\$go"; do
	for ((i = 0; i < n; i++)); do
		exec {fds[done]}>&-
		done=\$((done + 1))
	done
	touch "$T/closing.\$done"
done
EOF2
	spawn "$BASH" "$T/closing"
	wait_for -t 600 test -e "$T/closing.0"
}

@test "check and list count only the locks of 150 records: holders that closed without release are not held" {
	need_ofd
	closing "$F" 150
	run -0 held "$F"
	assert_output 150
	# 10 records whose lock is gone: each tested on its own
	echo 10 >"$T/closing.go"
	wait_for test -e "$T/closing.10"
	run -0 held "$F"
	assert_output 140
	run -0 --separate-stderr "$LOCKBOX" slots "$F" list
	assert_equal "${#lines[@]}" 141
	# a slot with no record behind it, locked by another program, counts
	# too: as that program's one lock
	need_lockhold
	lockhold "$F" $((4096 + 150 * 256)) 1
	run -0 held "$F"
	assert_output 141
	# 80 gone: too many to test one by one; the lock table is read again
	echo 70 >"$T/closing.go"
	wait_for test -e "$T/closing.80"
	run -0 held "$F"
	assert_output 71
	run -0 --separate-stderr "$LOCKBOX" slots "$F" list
	assert_equal "${#lines[@]}" 72
	assert_regex "${lines[71]}" "^151 +$LOCKHOLD_PID +\\? +another program: lockhold\$"
	# the freed slots are found and taken, the lowest first
	run -0 --separate-stderr "$LOCKBOX" slots "$F" 151 sh -c "$SHOW_SLOT"
	assert_output 1
}

@test "a pool with few records and 200 slot locks that have none: one foreign holder, its slots not free" {
	need_lockhold
	run -0 "$LOCKBOX" slots "$F" 1 true
	# slots 2 to 201: 200 locks, no records; past the range tests a few
	# records would take, so the kernel's lock table settles it
	lockhold -n 200 "$F" $((4096 + 256)) 1
	run -0 held "$F"
	assert_output 1
	run -0 --separate-stderr "$LOCKBOX" slots "$F" list
	assert_equal "${#lines[@]}" 2
	assert_regex "${lines[1]}" "^- +$LOCKHOLD_PID +\\? +another program: lockhold\$"
	# slot 1 is free, the 200 others are that program's
	start_holder "$F" 201
	assert_equal "$HOLDER_SLOT" 1
	run -75 --separate-stderr "$LOCKBOX" slots "$F" 201 touch "$T/ran"
	assert_stderr_regex "^slots: $(re_quote "$F"): all 201 slots busy: $(named_re "$HOLDER_PID" sh), $(foreign_re "$LOCKHOLD_PID" lockhold)\$"
	run -0 --separate-stderr "$LOCKBOX" slots "$F" 202 sh -c "$SHOW_SLOT"
	assert_output 202
}

# bats test_tags=wait
@test "-w beside a free slot another program read-locks: the waiter sleeps, and takes the slot once the lock goes" {
	need_lockhold
	local waiter a b
	start_holder "$F" 2
	assert_equal "$HOLDER_SLOT" 1
	lockhold -r "$F" $((4096 + 256)) 1
	spawn "$LOCKBOX" slots -w 60 "$F" 2 sh -c "$SHOW_SLOT"
	waiter=$SPAWN_PID
	wait_for waiting_on "$F" 1
	# (a read lock request of its own on that slot is granted beside the
	# other program's at once, and told nothing of its going: it woke the
	# waiter again and again, on every CPU, to its deadline; it looks once
	# a second instead)
	a=$(ctxt_switches "$waiter")
	sleep 2	# the measure's window, not a wait for something to happen
	b=$(ctxt_switches "$waiter")
	echo "# a waiter beside another program's read lock: $((b - a)) context switches in 2 s" >&3
	(((b - a) <= 40)) || fail "$((b - a)) context switches in 2 s"
	stop_pid "$LOCKHOLD_PID"
	reap "$waiter"
	assert_equal "$REAP_STATUS" 0
	assert_equal "$(cat "$SPAWN_OUT")" 2
}

# --- locks that lockbox did not take ----------------------------------------

@test "a foreign lockf(3) lock on the whole file: check counts one, list shows one row, a run gets 75 at once" {
	run -0 "$LOCKBOX" slots "$F" 2 true
	foreign_lockf ex "$F"
	run -0 --separate-stderr "$LOCKBOX" slots "$F" check
	assert_output 1
	run -0 --separate-stderr "$LOCKBOX" slots --json "$F" check
	assert_output "{\"file\":\"$F\",\"held\":1}"
	run -0 --separate-stderr "$LOCKBOX" slots "$F" list
	assert_equal "${#lines[@]}" 2
	assert_regex "${lines[1]}" "^- +$FOREIGN_PID +\\? +another program: python3\$"
	run -75 --separate-stderr at_once "$LOCKBOX" slots "$F" 3 touch "$T/ran"
	assert_stderr "slots: $F: locked by another program: PID $FOREIGN_PID (python3)"
	assert [ ! -e "$T/ran" ]
}

# bats test_tags=wait
@test "a foreign lock over some slots: those slots are its, one row, and the others are taken" {
	start_holder "$F" 4
	# slots 2 and 3: 512 bytes from slot 2's record
	foreign_lockf ex "$F" 512 $((4096 + 256))
	run -0 --separate-stderr "$LOCKBOX" slots "$F" check
	assert_output 2
	run -0 --separate-stderr "$LOCKBOX" slots "$F" list
	assert_equal "${#lines[@]}" 3
	assert_regex "${lines[1]}" "^1 +$HOLDER_PID +[^ ]+ +sh\$"
	assert_regex "${lines[2]}" "^- +$FOREIGN_PID +\\? +another program: python3\$"
	run -0 --separate-stderr "$LOCKBOX" slots --json "$F" list
	valid_json <<<"$output"
	assert_regex "$output" ",\\{\"slot\":null,\"pid\":$FOREIGN_PID,\"foreign\":true,\"lock\":\"write\",\"start\":4352,\"end\":4863,\"command\":\"python3\"\\}\\]\$"
	run -75 --separate-stderr "$LOCKBOX" slots "$F" 3 touch "$T/ran"
	assert_stderr_regex "^slots: $(re_quote "$F"): all 3 slots busy: $(named_re "$HOLDER_PID" sh), PID $FOREIGN_PID \\(another program: python3\\)\$"
	run -0 --separate-stderr "$LOCKBOX" slots "$F" 4 sh -c "$SHOW_SLOT"
	assert_output 4
}

# The sem pattern (GNU parallel's sem -j2): a shell takes a slot on an fd
# it opened, starts a job that inherits the fd, closes its own copy and
# goes on. The shell stays the recorded holder and lives on; the slot
# frees when the job ends, and a -w waiter must see that as any release.
# bats test_tags=wait
@test "-w: a slot left to a job by the shell that took it (sem pattern) is taken as the job ends" {
	need_ofd	# --fd needs open file description locks
	# shellcheck disable=SC2016 # expanded by the shell under test
	spawn bash -c '
		F=$1 T=$2
		for i in 1 2; do
			exec 7<>"$F"
			"$LOCKBOX" slots acquire --fd 7 2 >/dev/null || exit 1
			sleep 600 &
			echo $! >"$T/job.$i"
			exec 7>&-
		done
		exec 7<>"$F"
		"$LOCKBOX" slots acquire -w 20 --fd 7 2 >"$T/got.tmp" || exit
		date +%s%N >>"$T/got.tmp"
		mv "$T/got.tmp" "$T/got"
		exec sleep 600' sh "$F" "$T"
	local shell=$SPAWN_PID start took p
	wait_for test -s "$T/job.2"
	track_pid "$(cat "$T/job.1")"
	track_pid "$(cat "$T/job.2")"
	wait_for waiting_on "$F" 1
	run -0 held "$F"
	assert_output 2
	assert [ ! -e "$T/got" ]
	p=$(pace)
	start=$(date +%s%N)
	stop_pid "$(cat "$T/job.1")"
	wait_for test -e "$T/got"
	p=$(pace "$p")
	run -0 cat "$T/got"
	assert_equal "${lines[0]}" 1
	took=$(((lines[1] - start) / 1000000))
	# as the job ends: a few process starts, as this machine makes them now
	((took < 200 * p / 1000)) || fail "the waiter took the slot ${took}ms after the job ended (pace $((p / 1000))ms)"
	# the shell holds it now, through its new fd
	run -0 --separate-stderr "$LOCKBOX" slots "$F" list
	assert_regex "${lines[1]}" "^1 +$shell "
}

# The same in a pool too big for a lock request on every slot: the head
# looks again once a second, and also as soon as an open file of the lock
# file is closed for the last time (the job's end). Ended right after one
# of those looks (the header's count moves at each), the job must not
# wait for the next.
# bats test_tags=wait
@test "-w: a slot of a big pool left to a job (sem pattern) is taken as the job ends, not at the next look" {
	need_ofd	# --fd needs open file description locks
	# shellcheck disable=SC2016 # expanded by the shell under test
	spawn bash -c '
		F=$1 T=$2
		for i in 1 2 3 4; do
			exec 7<>"$F"
			"$LOCKBOX" slots acquire --fd 7 4 >/dev/null || exit 1
			sleep 600 &
			echo $! >"$T/job.$i"
			exec 7>&-
		done
		exec 7<>"$F"
		"$LOCKBOX" slots acquire -w 20 --fd 7 4 >"$T/got.tmp" || exit
		date +%s%N >>"$T/got.tmp"
		mv "$T/got.tmp" "$T/got"
		exec sleep 600' sh "$F" "$T"
	local i gen start took p
	wait_for test -s "$T/job.4"
	for i in 1 2 3 4; do
		track_pid "$(cat "$T/job.$i")"
	done
	wait_for waiting_on "$F" 1
	gen=$(slots_header_gen "$F")
	wait_for header_moved "$F" "$gen"
	p=$(pace)
	start=$(date +%s%N)
	stop_pid "$(cat "$T/job.4")"
	wait_for test -e "$T/got"
	p=$(pace "$p")
	run -0 cat "$T/got"
	assert_equal "${lines[0]}" 4
	took=$(((lines[1] - start) / 1000000))
	# as the job ends (a few process starts, as this machine makes them
	# now), not at the next look a second later
	((took < 200 * p / 1000)) || fail "the waiter took the slot ${took}ms after the job ended (pace $((p / 1000))ms)"
}

# slots_header_gen LOCKFILE: the header's progress count (u64 at offset
# 40), moved on at every write-locked visit of the header.
slots_header_gen() {
	od -An -tu8 -j40 -N8 "$1" | tr -d ' '
}

# header_moved LOCKFILE GEN: the count is no longer GEN.
header_moved() {
	[[ $(slots_header_gen "$1") != "$2" ]]
}
