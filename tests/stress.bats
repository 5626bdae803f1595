#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# shellcheck shell=bats
# Hundreds of launches racing for 3 slots, some holders SIGKILLed: the
# recorded holding intervals must never overlap more than 3 deep, never
# share a LOCKBOX_SLOT, and the pool must end empty.

load test_helper

LAUNCHES=${LOCKBOX_STRESS_LAUNCHES:-400}
# concurrent launches, so that 2 loaded cores cope
CAP=24

setup() {
	lockbox_setup
	if ((BASH_VERSINFO[0] < 5 || (BASH_VERSINFO[0] == 5 && BASH_VERSINFO[1] < 1))); then
		skip "needs bash 5.1 (wait -n -p)"
	fi
	mkdir "$T/log"
	# an idle FIFO: a timed read on it is a sleep without a child process,
	# so a SIGKILLed holder leaves nothing behind that keeps its slot
	mkfifo "$T/idle"
	# The holder runs with the slot (lockbox execs it: same PID). Times
	# are microseconds since the epoch: exact in awk's doubles.
	cat >"$T/holder" <<EOF
#!$BASH
# holder LOGDIR INDEX SECONDS
exec 9<>"\$1/../idle"
printf 'start %s %s %s\n' "\${EPOCHREALTIME/./}" "\$\$" "\$LOCKBOX_SLOT" >>"\$1/\$2"
read -r -t "\$3" -u 9 || true
printf 'end %s %s %s\n' "\${EPOCHREALTIME/./}" "\$\$" "\$LOCKBOX_SLOT" >>"\$1/\$2"
EOF
	# orphan: leaves the slot to a child and exits, so the recorded holder
	# is gone while the slot stays held: a waiter at the head of the queue
	# can only watch such a slot with a lock request of its own
	cat >"$T/orphan" <<EOF
#!$BASH
"$T/holder" "\$@" </dev/null >/dev/null 2>&1 &
EOF
	chmod +x "$T/holder" "$T/orphan"
	HOLDER=$T/holder
	KILLS=1
}

# launch_fast OPTION...: launch, in a subshell free of bats' per-command
# tracing, which would make the launcher far slower than the holders.
launch_fast() {
	(
		trap - DEBUG ERR
		set +eET
		launch "$@"
	)
}

# launch OPTION...: LAUNCHES runs of `lockbox slots OPTION... F 3 holder`,
# at most CAP at a time, about one holder in ten SIGKILLed while it runs.
# Writes $T/reaped (INDEX STATUS TIME) and
# $T/killed (INDEX TIME, the time just before the kill).
launch() {
	local -A live=() judged=()
	local i running=0 nseen=0 nkilled=0
	: >"$T/reaped"
	: >"$T/killed"
	for ((i = 1; i <= LAUNCHES; i++)); do
		while ((running >= CAP)); do
			reap_one || return 1
		done
		"$LOCKBOX" slots "$@" "$F" 3 "$HOLDER" "$T/log" "$i" "0.0$((RANDOM % 9 + 1))" \
			</dev/null >/dev/null 2>>"$T/stderr" 3>&- &
		live[$!]=$i
		running=$((running + 1))
		((KILLS == 0)) || maybe_kill
	done
	while ((running > 0)); do
		reap_one || return 1
	done
}

# reap_one: wait for any launch to end and record it (launch's locals).
reap_one() {
	local pid='' st=0
	wait -n -p pid || st=$?
	if [[ -z $pid || -z ${live[$pid]:-} ]]; then
		fail "wait -n returned no launch of ours (status $st)"
		return 1
	fi
	reaped "$pid" "$st"
}

reaped() {
	printf '%s %s %s\n' "${live[$1]}" "$2" "${EPOCHREALTIME/./}" >>"$T/reaped"
	unset "live[$1]"
	running=$((running - 1))
}

# maybe_kill: each holder seen running (started, not ended) for the first
# time is SIGKILLed with probability 1/10. Such a holder can only end by
# our kill, so its PID is still its own (bash may already have reaped
# launches that ended).
maybe_kill() {
	local pid i st
	for pid in "${!live[@]}"; do
		i=${live[$pid]:-}
		if [[ -z $i || -n ${judged[$i]:-} ]] || ! started_only "$T/log/$i"; then
			continue
		fi
		judged[$i]=1
		nseen=$((nseen + 1))
		# at random, but surely once by the tenth
		((RANDOM % 10 == 0 || (nkilled == 0 && nseen >= 10))) || continue
		nkilled=$((nkilled + 1))
		# taken before the kill: a lower bound of when the slot was freed
		printf '%s %s\n' "$i" "${EPOCHREALTIME/./}" >>"$T/killed"
		# it may have written its end line and gone just now
		kill -KILL "$pid" 2>/dev/null || true
		# reaped here: bash drops a job killed by a signal from what
		# wait -n reports, once it has told of it
		st=0
		wait "$pid" 2>/dev/null || st=$?
		reaped "$pid" "$st"
	done
}

# started_only LOG: the holder wrote its start line and not its end line.
started_only() {
	local log=()
	[[ -f $1 ]] || return 1
	mapfile -t log <"$1"
	((${#log[@]} == 1))
}

# intervals: one line "START END SLOT" per holder that ran. A killed holder
# has no end line: its end is the time just before the kill, which is
# earlier than the moment the kernel freed its slot (the reap time would
# be later, and a new holder may start in between). Every interval is thus
# inside the real holding time, so an overlap seen is an overlap that was.
intervals() {
	awk -v killed="$T/killed" '
		BEGIN { while ((getline line < killed) > 0) { split(line, f, " "); kt[f[1]] = f[2] } }
		{ n = split(FILENAME, p, "/"); i = p[n] }
		$1 == "start" { s[i] = $2; slot[i] = $4 }
		$1 == "end" { e[i] = $2 }
		END {
			for (i in s) {
				if (i in e) end = e[i]
				else if (i in kt) end = kt[i]
				else { print "no end for holder " i > "/dev/stderr"; exit 1 }
				if (end >= s[i]) print s[i], end, slot[i]
			}
		}' "$T"/log/*
}

# concurrency: from "START END SLOT" lines, print "MAX BADSLOT" where MAX is
# the deepest overlap and BADSLOT counts slots out of 1..3 or held twice
# at once. At equal times an end goes before a start.
concurrency() {
	awk '{ print $1, "S", $3; print $2, "E", $3 }' |
		LC_ALL=C sort -k1,1n -k2,2 |
		awk '
			$3 !~ /^[123]$/ { bad++ }
			$2 == "S" { cur++; if (cur > max) max = cur; if (++held[$3] > 1) bad++ }
			$2 == "E" { cur--; held[$3]-- }
			END { print max + 0, bad + 0 }'
}

count_status() {
	awk -v s="$1" '$2 == s { n++ } END { print n + 0 }' "$T/reaped"
}

@test "racing launches, some SIGKILLed: never more than 3 at once, slots distinct" {
	launch_fast
	local got refused killed ok depth
	assert_equal "$(wc -l <"$T/reaped")" "$LAUNCHES"
	got=$(cat "$T"/log/* | grep -c '^start ')
	refused=$(count_status 75)
	killed=$(count_status 137)
	ok=$(count_status 0)
	echo "# ran $got (killed $killed, kills sent $(wc -l <"$T/killed")), refused $refused of $LAUNCHES" >&3
	# every launch either ran or was refused; nothing else went wrong
	assert_equal $((ok + killed + refused)) "$LAUNCHES"
	assert_equal $((got + refused)) "$LAUNCHES"
	assert [ "$got" -gt 0 ]
	assert [ "$refused" -gt 0 ]
	assert [ "$killed" -gt 0 ]
	# the only message is the busy one
	run -1 grep -Ev "^slots: $(re_quote "$F"): all 3 slots busy \\(PIDs [0-9?]+, [0-9?]+, [0-9?]+\\)\$" "$T/stderr"
	intervals >"$T/intervals"
	run -0 concurrency <"$T/intervals"
	depth=$output
	# exactly 3 at the deepest: never 4, and the pool was really used
	assert_equal "$depth" "3 0"
	run -0 held "$F"
	assert_output 0
}

@test "racing launches with -w 30, some SIGKILLed: all run, never more than 3 at once" {
	launch_fast -w 30
	local got killed ok
	assert_equal "$(wc -l <"$T/reaped")" "$LAUNCHES"
	got=$(cat "$T"/log/* | grep -c '^start ')
	killed=$(count_status 137)
	ok=$(count_status 0)
	echo "# ran $got (killed $killed) of $LAUNCHES" >&3
	assert_equal "$got" "$LAUNCHES"
	assert_equal $((ok + killed)) "$LAUNCHES"
	assert_equal "$(cat "$T/stderr")" ""
	intervals >"$T/intervals"
	run -0 concurrency <"$T/intervals"
	assert_equal "$output" "3 0"
	run -0 held "$F"
	assert_output 0
}

# all_ended N: N holder logs each have their end line.
all_ended() {
	(($(cat "$T"/log/* 2>/dev/null | grep -c '^end ') == $1))
}

@test "racing launches with -w 30, holders that leave the slot to a child: never a slot held twice" {
	need_ofd	# a classic POSIX lock is not inherited: the child would not hold it
	HOLDER=$T/orphan
	KILLS=0
	launch_fast -w 30
	assert_equal "$(count_status 0)" "$LAUNCHES"
	assert_equal "$(cat "$T/stderr")" ""
	wait_for -t 120 all_ended "$LAUNCHES"
	intervals >"$T/intervals"
	run -0 concurrency <"$T/intervals"
	assert_equal "$output" "3 0"
	wait_for held_is "$F" 0
}
