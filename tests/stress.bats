#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# shellcheck shell=bats
# Hundreds of launches racing for 3 slots, some holders SIGKILLed: the
# recorded holding intervals must never overlap more than 3 deep, never
# share a LOCKBOX_SLOT, and the pool must end empty.

load test_helper
# bats file_tags=lockkind

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

# odd_ends: say how each launch that neither ran nor was refused nor
# killed ended, and every message but the busy one
odd_ends() {
	awk '$2 != 0 && $2 != 75 && $2 != 137 { n[$2]++ } END { for (s in n) printf "# %d launches ended %s\n", n[s], s }' "$T/reaped" >&3
	grep -Ev "^slots: $(re_quote "$F"): all 3 slots busy " "$T/stderr" | sort | uniq -c | head -n 20 | sed 's/^/# /' >&3 || true
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
	# (else say what: each other status, and every other message)
	((ok + killed + refused == LAUNCHES)) || odd_ends
	assert_equal $((ok + killed + refused)) "$LAUNCHES"
	assert_equal $((got + refused)) "$LAUNCHES"
	assert [ "$got" -gt 0 ]
	assert [ "$refused" -gt 0 ]
	assert [ "$killed" -gt 0 ]
	# the only message is the busy one
	run -1 grep -Ev "^slots: $(re_quote "$F"): all 3 slots busy: PID [0-9?]+( \\([^)]*\\))?, PID [0-9?]+( \\([^)]*\\))?, PID [0-9?]+( \\([^)]*\\))?\$" "$T/stderr"
	intervals >"$T/intervals"
	run -0 concurrency <"$T/intervals"
	depth=$output
	# exactly 3 at the deepest: never 4, and the pool was really used
	assert_equal "$depth" "3 0"
	run -0 held "$F"
	assert_output 0
}

# bats test_tags=wait
@test "racing launches on a busy host: a header held by a process that waits for a CPU is waited for, never given up on" {
	local i cpus bad load n
	cpus=$(nproc)
	# two busy loops a CPU, less what the host runs already (its 1-minute
	# load average), but one a CPU at least: where other suites keep the
	# host busy, as in CI, two a CPU slowed them all for as long as the
	# launches took. And a header gone round after 20 ms without
	# progress: every holder of it that merely waits for a CPU is met
	read -r load _ </proc/loadavg
	n=$((2 * cpus - ${load%.*}))
	n=$((n > cpus ? n : cpus))
	echo "# busy loops added: $n (load average $load, $cpus CPUs)" >&3
	for ((i = 0; i < n; i++)); do
		spawn "$BASH" -c 'while :; do :; done'
	done
	LOCKBOX_TEST_HEADER_WAIT=20ms launch_fast
	kill_tracked
	bad=$(awk '$2 != 0 && $2 != 75 && $2 != 137 { n++ } END { print n + 0 }' "$T/reaped")
	((bad == 0)) || odd_ends
	assert_equal "$bad" 0
	intervals >"$T/intervals"
	run -0 concurrency <"$T/intervals"
	assert_regex "$output" '^[123] 0$'
}

# long_wait: a -w for LAUNCHES racing launches that must all be served:
# 30 s, or 10,000 paces on a machine slow enough that 30 s would not do
# (at a load of 50 on 2 CPUs, 400 launches queued for 30 s, and 18 timed
# out); in seconds
long_wait() {
	paces_or 10000 30
}

# bats test_tags=wait
@test "racing launches with -w 30, some SIGKILLed: all run, never more than 3 at once" {
	launch_fast -w "$(long_wait)"
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

# bats test_tags=wait
@test "racing launches with -w 30, holders that leave the slot to a child: never a slot held twice" {
	need_ofd	# a classic POSIX lock is not inherited: the child would not hold it
	HOLDER=$T/orphan
	KILLS=0
	launch_fast -w "$(long_wait)"
	assert_equal "$(count_status 0)" "$LAUNCHES"
	assert_equal "$(cat "$T/stderr")" ""
	wait_for -t 120 all_ended "$LAUNCHES"
	intervals >"$T/intervals"
	run -0 concurrency <"$T/intervals"
	assert_equal "$output" "3 0"
	wait_for held_is "$F" 0
}

# --- waiters among stopped, killed and hostile ones ------------------------

# ran_through LOG: the holder wrote its start line and its end line.
ran_through() {
	local log=()
	mapfile -t log <"$1"
	((${#log[@]} == 2))
}

# bats test_tags=privilege,wait
@test "-w waiters with queued ones SIGSTOPped and SIGKILLed: never more than 3 at once, every live one served" {
	local n=30 i pid t0 w pids=() stopped=() killed=() alive=()
	# every waiter's -w: long enough to queue thirty on this machine now
	# (a loaded one took most of 25 s) and to serve them once the holders
	# go, a few of lockbox's paces each, however the load moves meanwhile
	w=$(paces_or 400 60)
	: >"$T/killed"
	for i in 1 2 3; do
		start_holder "$F" 3
		pids[i]=$HOLDER_PID
	done
	# everyone queues behind the three holders
	for ((i = 1; i <= n; i++)); do
		"$LOCKBOX" slots -w "$w" "$F" 3 "$T/holder" "$T/log" "$i" "0.0$((RANDOM % 9 + 1))" \
			</dev/null >/dev/null 2>>"$T/stderr" 3>&- &
		pids[i + 3]=$!
		track_pid "$!"
	done
	wait_for waiting_on "$F" "$n"
	# in their places in the queue: every fourth stopped, every eighth killed
	for ((i = 2; i <= n; i += 4)); do
		kill -STOP "${pids[i + 3]}"
		stopped+=("$i")
	done
	for ((i = 4; i <= n; i += 8)); do
		stop_pid "${pids[i + 3]}"
		killed+=("$i")
	done
	t0=$SECONDS
	for i in 1 2 3; do
		stop_pid "${pids[i]}"
	done
	for ((i = 1; i <= n; i++)); do
		[[ " ${stopped[*]} ${killed[*]} " == *" $i "* ]] || alive+=("$i")
	done
	# every live waiter is served, none left waiting while a slot is free
	for i in "${alive[@]}"; do
		reap "${pids[i + 3]}"
		if ((REAP_STATUS != 0)); then
			fail "waiter $i: status $REAP_STATUS after $((SECONDS - t0))s (-w ${w}s); the waiters said:"$'\n'"$(cat "$T/stderr")"
		fi
		ran_through "$T/log/$i"
	done
	echo "# ${#alive[@]} live waiters served in $((SECONDS - t0))s past ${#stopped[@]} stopped ones" >&3
	assert [ $((SECONDS - t0)) -le "$(paces_or 120 20)" ]
	# continued, the stopped ones are served too, or their time ran out while stopped
	for i in "${stopped[@]}"; do
		kill -CONT "${pids[i + 3]}"
	done
	for i in "${stopped[@]}"; do
		reap "${pids[i + 3]}"
		[[ $REAP_STATUS == 0 || $REAP_STATUS == 75 ]] || fail "stopped waiter $i: status $REAP_STATUS"
	done
	run -1 grep -Ev "^slots: $(re_quote "$F"): timed out after ${w}s; " "$T/stderr"
	intervals >"$T/intervals"
	run -0 concurrency <"$T/intervals"
	assert_regex "$output" '^[123] 0$'
	wait_for held_is "$F" 0
}

# tickets LOCKFILE N: N waiters hold a ticket of LOCKFILE's queue (below
# the waiters' marks at 2^32 + 2^48).
tickets() {
	local id
	id=$(lock_id "$1") || return 1
	(($(awk -v id="$id" '$2 != "->" && $6 == id && $7 >= 4294967296 && $7 < 281479271677952 { n++ }
		END { print n + 0 }' /proc/locks) == $2))
}

# masked CMD...: become CMD, in a mount namespace of its own where
# /proc/locks is empty, as some containers show it. It execs: run it in
# the background or in a subshell, where CMD then keeps the PID of $!.
masked() {
	# shellcheck disable=SC2016 # expanded by the namespace's bash
	exec unshare -m --propagation private bash -c 'mount --bind /dev/null /proc/locks && exec "$@"' masked "$@"
}

# bats test_tags=privilege,wait
@test "-w behind a stopped waiter where /proc/locks shows nothing: passed as soon as the holder goes" {
	command -v unshare >/dev/null || skip "needs unshare(1)"
	(masked true) 2>/dev/null || skip "cannot make a mount namespace here"
	local a b t0 t1 p
	start_holder "$F" 1
	masked "$LOCKBOX" mutex -w 30 "$F" touch "$T/a" </dev/null 2>"$T/a.err" &
	a=$!
	track_pid "$a"
	wait_for tickets "$F" 1
	kill -STOP "$a"
	masked "$LOCKBOX" mutex -w 20 "$F" touch "$T/b" </dev/null 2>"$T/b.err" &
	b=$!
	track_pid "$b"
	wait_for tickets "$F" 2
	# whose ticket is ahead is found from the kernel's answer for its
	# byte and the waiters' fdinfo, not from the lock table: a read of it
	# can miss a line while the host's locks change, and the waiter
	# behind then took a stopped waiter for a running one, to its deadline
	p=$(pace)
	t0=${EPOCHREALTIME/./}
	stop_pid "$HOLDER_PID"
	reap "$b"
	t1=${EPOCHREALTIME/./}
	p=$(pace "$p")
	assert_equal "$REAP_STATUS" 0
	assert [ -e "$T/b" ]
	# served as the holder goes, by its next look past the stopped one
	# (once a second) and a few process starts, as this machine makes
	# them now: not at its deadline
	((t1 - t0 <= 1000000 + 200 * p)) || fail "served after $(((t1 - t0) / 1000))ms (pace $((p / 1000))ms)"
	run -0 cat "$T/b.err"
	assert_output ""
	kill -CONT "$a"
	reap "$a"
	assert_equal "$REAP_STATUS" 0
	assert [ -e "$T/a" ]
}

# locker_ready READY PID: the locker has its lock, or has given up.
locker_ready() {
	[[ -e $1 ]] || ! kill -0 "$2" 2>/dev/null
}

# foreign_locker SECONDS: for SECONDS, another user (nobody) read-locks
# one part of $F at a time, for half a second to 1.4 s, each kind in turn
# at a random place: a header byte, the join byte, a slot's byte, one of
# the next few tickets, and every other time every ticket from the next
# to be taken on (the lock that made a joiner spin).
foreign_locker() {
	local end=$((SECONDS + $1)) dir k=0 start len t next pid
	dir=$(world_readable_dir)
	chown 65534 "$dir"
	while ((SECONDS < end)); do
		k=$((k + 1))
		len=1
		next=$(od -An -tu8 -j32 -N8 "$F" | tr -d ' ')
		case $((k % 8)) in
		1) start=$((RANDOM % 4096)) ;;
		3) start=4294967295 ;;
		5) start=$((4096 + 256 * (RANDOM % 3))) ;;
		7) start=$((4294967296 + next + RANDOM % 3)) ;;
		*) start=$((4294967296 + next)) len=0 ;;
		esac
		# (-t: a byte locked already, by a holder or a waiter, is passed)
		setpriv --reuid=65534 --regid=65534 --clear-groups \
			"$LOCKHOLD" "${LOCKHOLD_MODE[@]}" -r -t "$F" "$start" "$len" "$dir/$k" 3>&- &
		pid=$!
		track_pid "$pid"
		wait_for locker_ready "$dir/$k" "$pid"
		[[ -e $dir/$k ]] || continue
		printf '%s %s\n' "$start" "$len" >>"$T/foreign"
		t=$((RANDOM % 10 + 5))
		read -r -t "$((t / 10)).$((t % 10))" -u 9 || true
		stop_pid "$pid"
	done 9<>"$T/idle"
}

# bats test_tags=privilege,wait
@test "-w waiters while another user read-locks header, join, ticket and slot bytes: back by the deadline, no spinning, at most 3" {
	need_root_and_nobody
	need_lockhold
	local n=40 i st elapsed cpu p pids=()
	LOCKHOLD_MODE=()
	ofd_build || LOCKHOLD_MODE=(-p)
	F=$(world_readable_dir)/lock
	run -0 "$LOCKBOX" slots --mode 0644 "$F" 3 true
	: >"$T/killed"
	# one waiter: its status, time in ms and CPU time in ms (its children's, from times)
	cat >"$T/waiter" <<EOF
#!$BASH
t0=\${EPOCHREALTIME/./}
timeout 20 "$LOCKBOX" slots -w 3 "$F" 3 "$T/holder" "$T/log" "\$1" "0.\$((RANDOM % 5 + 5))" 2>>"$T/stderr"
st=\$?
t1=\${EPOCHREALTIME/./}
times >"$T/times.\$1"
printf '%s %s\n' "\$st" "\$(((t1 - t0) / 1000))" >"$T/result.\$1"
EOF
	chmod +x "$T/waiter"
	p=$(pace)
	foreign_locker 9 </dev/null >/dev/null 2>&1 3>&- &
	local locker=$!
	track_pid "$locker"
	for ((i = 1; i <= n; i++)); do
		"$T/waiter" "$i" </dev/null >/dev/null 2>&1 3>&- &
		pids+=("$!")
		track_pid "$!"
		# a steady stream, so that some come while each kind of lock is held
		read -r -t 0.15 -u 9 9<>"$T/idle" || true
	done
	for pid in "${pids[@]}"; do
		reap "$pid"
	done
	reap "$locker"
	p=$(pace "$p")
	echo "# pace $((p / 1000))ms" >&3
	for ((i = 1; i <= n; i++)); do
		read -r st elapsed <"$T/result.$i"
		# children's user and system time, the second line of times: 0m0.004s 0m0.002s
		cpu=$(awk 'NR == 2 { split($1, u, /[ms]/); split($2, s, /[ms]/); print int((u[1] * 60 + u[2] + s[1] * 60 + s[2]) * 1000) }' "$T/times.$i")
		echo "# waiter $i: status $st after ${elapsed}ms, CPU ${cpu}ms" >&3
		[[ $st == 0 || $st == 75 ]] || fail "waiter $i: status $st: $(cat "$T/stderr")"
		# -w 3, and a holder of at most 0.9 s when it ran (its wait for a
		# header held by the foreign user is bounded by the deadline too),
		# and the few process starts of a waiter as this machine makes them
		assert [ "$elapsed" -le $((3900 + 100 * p / 1000)) ]
		# waiting costs nothing: one that spun would use most of its 3 s.
		# Starting lockbox and the holder costs a little; a refusal (75)
		# names the foreign lock's process, a look through every
		# process's fdinfo: tens of ms, up to half a second of CPU under
		# a sanitizer on a busy host
		if [[ $st == 0 ]]; then
			assert [ "$cpu" -le 400 ]
		else
			assert [ "$cpu" -le 1000 ]
		fi
	done
	echo "# $(grep -c '^0 ' "$T"/result.* | awk -F: '{ n += $2 } END { print n }') of $n served; $(wc -l <"$T/foreign") foreign locks" >&3
	intervals >"$T/intervals"
	run -0 concurrency <"$T/intervals"
	assert_regex "$output" '^[0123] 0$'
}

# One lock a path under attack. Holders of one path through every entry
# lockbox has and the peers users come from, while another process cuts
# the file short, overwrites its header and renames a new file over it.
# Each holder is tests/interval: it writes the file it held (its inode)
# and when it held it. Per file, an exclusive holder's interval must
# overlap no other holder's. (Holders of different files overlap by
# design: a file renamed over the path while held leaves its holder
# holding a file no longer there, for every tool; lockbox looks the path
# up again after taking a lock, so it never starts on the old one.)

# worker KIND COUNT FILE: COUNT holds of FILE the KIND way, each of a
# random 0.2 to 2 ms; statuses other than 0 counted in $T/status.KIND
worker() {
	local kind=$1 n=$2 f=$3 i us st
	local -a hold
	case $kind in
	mutex) hold=("$LOCKBOX" mutex -w 60 "$f") ;;
	mutex-s) hold=("$LOCKBOX" mutex -s -w 60 "$f") ;;
	flock) hold=(flock -w 60 "$f") ;;
	flock-s) hold=(flock -s -w 60 "$f") ;;
	s6-setlock) hold=(s6-setlock -t 60000 "$f") ;;
	lckdo) hold=(lckdo -w "$f") ;;
	lckdo-s) hold=(lckdo -s -w "$f") ;;
	s6setlock-s) hold=(s6-setlock -r -t 60000 "$f") ;;
	# a classic POSIX read lock (lockf(3)'s kind), kept across the exec
	# by a descriptor the exec does not close (a close would drop it)
	lockf-s) hold=(python3 -c 'import fcntl, os, sys
f = open(sys.argv[1])
os.set_inheritable(f.fileno(), True)
fcntl.lockf(f, fcntl.LOCK_SH)
os.execv(sys.argv[2], sys.argv[2:])' "$f") ;;
	esac
	for ((i = 0; i < n; i++)); do
		us=$((200 + RANDOM % 1800))
		st=0
		if [[ $kind == library ]]; then
			# the shell holds it; a release goes before the next acquire
			# shellcheck disable=SC2016 # expanded by the inner bash
			"$BASH" -c '. "$("$1" --shell-lib)" || exit 125
				acquire_mutex -w 60 "$2" || exit
				"$3" "$4" x "$2" "$5"
				release_mutex "$2"' sh "$LOCKBOX" "$f" "$INTERVAL" "$T/held" "$us" || st=$?
		else
			"${hold[@]}" "$INTERVAL" "$T/held" "${kind/*-s/s}" "$f" "$us" || st=$?
		fi
		((st == 0)) || printf '%s\n' "$st" >>"$T/status.$kind"
	done
}

# chaos FILE: until $T/stop exists, every few ms one of: cut FILE short,
# zero its first 16 bytes (a lock file's magic), rename a new empty file
# over it; the counts in $T/chaos
chaos() {
	local f=$1 cut=0 over=0 renamed=0 i=0
	while [[ ! -e $T/stop ]]; do
		case $((RANDOM % 3)) in
		0) : >"$f" && cut=$((cut + 1)) ;;
		1) dd if=/dev/zero of="$f" bs=16 count=1 conv=notrunc status=none && over=$((over + 1)) ;;
		2) : >"$T/new.$i" && mv -f "$T/new.$i" "$f" && renamed=$((renamed + 1)) ;;
		esac
		i=$((i + 1))
		read -r -t "0.00$((RANDOM % 8 + 2))" -u 9 9<>"$T/idle" || true
	done
	printf '%s %s %s\n' "$cut" "$over" "$renamed" >"$T/chaos"
}

# overlaps: from "KIND INODE START END" lines, the number of pairs of
# intervals on one file that overlap where either is exclusive (x).
overlaps() {
	awk '{ print $2, $3, "S", $1; print $2, $4, "E", $1 }' |
		LC_ALL=C sort -k1,1 -k2,2n -k3,3 |
		awk '
			$1 != file { file = $1; x = 0; s = 0 }
			$3 == "S" && $4 == "x" { if (x + s > 0) bad++; x++ }
			$3 == "S" && $4 == "s" { if (x > 0) bad++; s++ }
			$3 == "E" && $4 == "x" { x-- }
			$3 == "E" && $4 == "s" { s-- }
			END { print bad + 0 }'
}

@test "one lock a path under attack: mutex, mutex -s, the library, flock(1), s6-setlock and lckdo, shared and not, and lockf(3) readers while the file is cut short, overwritten and replaced: no exclusive holder overlaps another" {
	local total=${LOCKBOX_STRESS_INTERVALS:-2600} kinds=() k n m planned=0 pids=() chaos_pid intervals lock limit
	INTERVAL=$LOCKBOX_BUILDDIR/tests/interval
	[[ -x $INTERVAL ]] || skip "tests/interval is not built (make tests/interval)"
	kinds=(mutex mutex-s)
	# the library locks its shell's fd: open file description locks
	ofd_build && kinds+=(library)
	command -v flock >/dev/null && kinds+=(flock flock-s)
	command -v s6-setlock >/dev/null && kinds+=(s6-setlock s6setlock-s)
	command -v lckdo >/dev/null && kinds+=(lckdo lckdo-s)
	command -v python3 >/dev/null && kinds+=(lockf-s)
	n=$(((total + ${#kinds[@]} - 1) / ${#kinds[@]}))
	: >"$T/held"
	lock=$T/lock
	"$LOCKBOX" mutex "$lock" create
	(
		trap - DEBUG ERR
		set +eET
		chaos "$lock"
	) </dev/null >/dev/null 2>"$T/chaos.err" 3>&- &
	chaos_pid=$!
	track_pid "$chaos_pid"
	for k in "${kinds[@]}"; do
		# the other programs' readers a third as often: readers that
		# overlap one another without a gap keep every writer out, for
		# every tool (the kernel puts no writer ahead of a reader)
		m=$n
		[[ $k == *-s && $k != mutex-s ]] && m=$(((n + 2) / 3))
		planned=$((planned + m))
		(
			trap - DEBUG ERR
			set +eET
			worker "$k" "$m" "$lock"
		) </dev/null >/dev/null 2>>"$T/stderr.$k" 3>&- &
		pids+=("$!")
		track_pid "$!"
	done
	# each worker's n runs, a few of lockbox's paces each, as this machine
	# makes them now (under a load of a hundred, one took over 120 s)
	limit=$(paces_or $((40 * n)) "$REAP_LIMIT")
	for k in "${pids[@]}"; do
		reap -t "$limit" "$k"
	done
	touch "$T/stop"
	reap "$chaos_pid"
	intervals=$(wc -l <"$T/held")
	echo "# ${kinds[*]}: $intervals intervals, $(overlaps <"$T/held") overlaps; cut short, overwritten, replaced: $(cat "$T/chaos")" >&3
	for k in "${kinds[@]}"; do
		[[ ! -s $T/status.$k ]] || echo "# $k: statuses $(sort "$T/status.$k" | uniq -c | tr -s ' \n' ' ')" >&3
		[[ ! -s $T/stderr.$k ]] || echo "# $k: $(sort "$T/stderr.$k" | uniq -c | sort -rn | head -3 | tr -s ' \n' ' ')" >&3
	done
	run -0 overlaps <"$T/held"
	assert_output 0
	# every holder found the file it held
	# shellcheck disable=SC2016 # awk's
	run -0 awk '$2 == 0 { n++ } END { print n + 0 }' "$T/held"
	assert_output 0
	assert [ "$intervals" -ge "$((planned * 3 / 4))" ]
	# lockbox's own runs were all served, and the library's, which opens
	# a file replaced under it again for the rest of its -w
	assert [ ! -s "$T/status.mutex" ]
	assert [ ! -s "$T/status.mutex-s" ]
	assert [ ! -s "$T/status.library" ]
	assert [ ! -s "$T/stderr.library" ]
}
