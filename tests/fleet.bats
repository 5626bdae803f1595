#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# shellcheck shell=bats
# The PostgreSQL backend under faults (tools/fleet): client hosts in network
# namespaces loop mutex -w / slots -w on one lock name while a scheduler
# partitions hosts, drops and delays packets one way, kills holders, ends
# their sessions and restarts or stops the server; tools/fleet-check
# finds no holder granted a slot that another holder, not told of its
# loss, still ran in. And the checker itself: it reports what it must.
# The runs need root, ip netns, iptables and PostgreSQL's server binaries;
# the checker's cases need python3 only.

load test_helper

setup() {
	lockbox_setup
	SRC=${LOCKBOX_SRCDIR:-$BATS_TEST_DIRNAME/..}
	command -v python3 >/dev/null || skip "needs python3 (tools/fleet-check)"
}

# The harness's own needs, or a skip that names the missing one.
need_fleet() {
	((EUID == 0)) || skip "needs root (network namespaces)"
	command -v ip >/dev/null || skip "needs ip(8) (iproute2)"
	command -v iptables >/dev/null || skip "needs iptables"
	command -v psql >/dev/null || skip "needs psql"
	compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null ||
		[[ -x $(pg_config --bindir 2>/dev/null)/initdb ]] ||
		skip "needs PostgreSQL's server binaries (initdb)"
	[[ -z ${LOCKBOX_PG_HELPER:-} || -x $LOCKBOX_PG_HELPER ]] ||
		skip "this build has no PostgreSQL helper ($LOCKBOX_PG_HELPER)"
	[[ -n ${LOCKBOX_PG_HELPER:-} || -x ${LOCKBOX%/*}/lockbox-pg ]] ||
		skip "this build has no PostgreSQL helper (lockbox-pg beside $LOCKBOX)"
	local probe=lbfprobe$$
	ip netns add "$probe" 2>/dev/null || skip "cannot make a network namespace here (ip netns add)"
	ip netns del "$probe"
}

# fleet ARG...: tools/fleet ARG... $T/run, bounded (a hang ends with TERM,
# which the harness cleans up after)
fleet() {
	# (four minutes, or more of lockbox's paces on a loaded or sanitized run)
	timeout -s TERM "$(paces_or 2400 240)" "$SRC/tools/fleet" "$@" "$T/run" 3>&-
}

# no namespace, server or client of the run is left
assert_cleaned_up() {
	local run
	run=$(sed -n 's/.* run=\([^ ]*\).*/\1/p' "$T/run/events.log" | head -n 1)
	[[ -n $run ]]
	run -0 ip netns list
	refute_output --partial "$run-"
	run -1 pgrep -f "$T/run"
}

# ev LINE...: a crafted event log, times in seconds from 1000
ev() {
	mkdir -p "$T/log"
	printf '%s\n' "$@" >"$T/log/events.log"
}

@test "check: a holder granted while another of its slot runs untold is an overlap; told, ended or killed is not" {
	ev '1000.0 setup hosts=3' \
		'1000.1 start h1 1 101 1 10 1 500' \
		'1000.5 told h1 1 101' \
		'1000.6 start h2 1 102 1 11 1 500' \
		'1000.7 fault kill h2 1 102' \
		'1000.8 start h3 1 103 1 12 1 500' \
		'1001.0 end h3 1 103' \
		'1001.1 start h1 2 104 1 13 2 500' \
		'1001.2 start h2 2 105 1 14 1 500' \
		'1001.3 end h2 2 105' \
		'1001.4 end h1 2 104' \
		'1001.5 stop'
	run -1 "$SRC/tools/fleet-check" "$T/log"
	assert_line 'overlaps: 1'
	assert_line --regexp '^  slot 1: h2 2 \(pid 105, fence 14\) granted at .* while h1 2 \(pid 104, fence 13\) inside'
	assert_line 'over MAX: 1'
	assert_line 'fence regressions: 0 (across a server crash: 0)'
	assert_line 'faults kill: 1'
	assert_line 'result: FAIL'
}

@test "check: slots of a pool may run together, up to MAX; a fence not above its slot's last is a regression" {
	ev '1000.1 start h1 1 101 1 10 2 500' \
		'1000.2 start h2 1 102 2 11 2 500' \
		'1000.4 end h1 1 101' \
		'1000.4 end h2 1 102' \
		'1000.5 stop'
	run -0 "$SRC/tools/fleet-check" "$T/log"
	assert_line 'overlaps: 0'
	assert_line 'over MAX: 0'
	assert_line 'result: ok'

	ev '1000.1 start h1 1 101 1 10 2 500' \
		'1000.2 start h2 1 102 2 11 2 500' \
		'1000.3 start h3 1 103 3 12 2 500' \
		'1000.4 end h1 1 101' \
		'1000.5 start h1 2 104 1 13 2 500' \
		'1000.6 stop'
	run -1 "$SRC/tools/fleet-check" "$T/log"
	assert_line 'overlaps: 0'
	assert_line 'over MAX: 2'
	assert_line 'fence regressions: 0 (across a server crash: 0)'

	ev '1000.1 start h1 1 101 1 10 2 500' \
		'1000.4 end h1 1 101' \
		'1000.5 start h2 1 102 1 9 2 500' \
		'1000.6 stop'
	run -1 "$SRC/tools/fleet-check" "$T/log"
	assert_line 'overlaps: 0'
	assert_line 'over MAX: 0'
	assert_line 'fence regressions: 1 (across a server crash: 0)'
}

@test "check: a fence that repeats across an immediate restart is told apart; --allow-crash-fences lets it pass" {
	# h2 repeats h1's fence after the server's immediate restart
	local crash=('1000.1 start h1 1 101 1 10 1 500'
		'1000.2 fault restart-immediate srv'
		'1000.2 told h1 1 101'
		'1000.3 end h1 1 101'
		'1001.0 start h2 1 102 1 10 1 500'
		'1001.1 end h2 1 102')
	ev "${crash[@]}" \
		'1001.2 start h3 1 103 1 12 1 500' \
		'1001.3 end h3 1 103' \
		'1001.4 start h4 1 104 1 11 1 500' \
		'1001.5 end h4 1 104' \
		'1001.6 stop'
	run -1 "$SRC/tools/fleet-check" "$T/log"
	assert_line 'fence regressions: 2 (across a server crash: 1)'
	assert_line '  slot 1: h2 1 fence 10 after h1 1 fence 10, across a server crash'
	assert_line '  slot 1: h4 1 fence 11 after h3 1 fence 12'
	# the one that no crash explains still fails it
	run -1 "$SRC/tools/fleet-check" --allow-crash-fences "$T/log"
	ev "${crash[@]}" '1001.4 stop'
	run -1 "$SRC/tools/fleet-check" "$T/log"
	run -0 "$SRC/tools/fleet-check" --allow-crash-fences "$T/log"
	assert_line 'fence regressions: 1 (across a server crash: 1)'
}

@test "check: the fences order two grants whose logged starts came the other way round" {
	# h2's mutex was granted first (fence 20); h3's slot 2 after it was
	# (fence 21), but h3's start was logged first
	ev '1000.1 start h3 1 103 2 21 2 500' \
		'1000.2 start h2 1 102 1 20 1 500' \
		'1000.5 end h2 1 102' \
		'1000.5 end h3 1 103' \
		'1000.6 stop'
	run -0 "$SRC/tools/fleet-check" "$T/log"
	assert_line 'over MAX: 0'
	# by the fences, a mutex granted while a slot is held is over MAX,
	# whichever start was logged first
	ev '1000.1 start h3 1 103 2 20 2 500' \
		'1000.2 start h2 1 102 1 21 1 500' \
		'1000.5 end h2 1 102' \
		'1000.5 end h3 1 103' \
		'1000.6 stop'
	run -1 "$SRC/tools/fleet-check" "$T/log"
	assert_line 'over MAX: 1'
}

@test "check: a partition's times to told and to granted elsewhere; a missing kind fails --require" {
	ev '1000.0 start h1 1 101 1 10 1 30000' \
		'1001.0 fault partition h1 20s' \
		'1012.0 told h1 1 101' \
		'1012.1 end h1 1 101' \
		'1021.0 heal partition h1' \
		'1021.5 start h2 1 102 1 11 1 500' \
		'1022.0 end h2 1 102' \
		'1022.1 stop'
	run -1 "$SRC/tools/fleet-check" --require partition,kill "$T/log"
	assert_line 'overlaps: 0'
	assert_line 'partition to told: max 11.000 s, median 11.000 s (1)'
	assert_line 'partition to granted elsewhere: max 20.500 s, median 20.500 s (1)'
	assert_line 'missing fault kinds: kill'
	run -0 "$SRC/tools/fleet-check" --require partition "$T/log"
	run -2 "$SRC/tools/fleet-check" "$T/nothing"
}

@test "check: a write after a later holder of its slot was granted is late, refused when its fence is smaller; a frozen holder is out from its freeze" {
	ev '1000.0 start h1 1 101 1 10 1 30000' \
		'1000.1 write h1 1 101 1 10' \
		'1001.0 fault freeze h1 1 101 25s' \
		'1016.5 start h2 1 102 1 11 1 500' \
		'1016.6 write h2 1 102 1 11' \
		'1017.0 end h2 1 102' \
		'1026.0 heal freeze h1 1' \
		'1026.1 write h1 1 101 1 10' \
		'1026.2 told h1 1 101' \
		'1026.4 end h1 1 101' \
		'1027.0 stop'
	run -0 "$SRC/tools/fleet-check" "$T/log"
	assert_line 'overlaps: 0'
	assert_line 'writes: 3; late (after a later holder of the slot was granted): 1, refused by the fence: 1'
	assert_line 'unfenced writes: 0'
	assert_line '  freeze h1 1 slot 1: told after 25.200 s (0.200 s after the thaw), slot granted on after 15.500 s (fence 10, then 11)'
	# with fences that went back (h2's below h1's), the resource takes the
	# late write: unfenced
	sed -i -e 's/^\(1016.[56] .* 1 \)11\( .*\)\{0,1\}$/\19\2/' "$T/log/events.log"
	run -1 "$SRC/tools/fleet-check" "$T/log"
	assert_line 'unfenced writes: 1'
	assert_line 'result: FAIL'
}

@test "fleet: a client host that ignores the lock is caught as overlaps" {
	need_fleet
	run fleet -t 4 -k kill -b 2
	assert_success
	run "$SRC/tools/fleet-check" "$T/run"
	assert_failure 1
	assert_line --regexp '^overlaps: [1-9][0-9]*$'
	assert_line --regexp '^  slot 1: .*h2 '
	assert_line 'result: FAIL'
	assert_cleaned_up
}

@test "fleet: faults of every kind, three client hosts, no overlap" {
	need_fleet
	local kinds=partition,loss,delay,kill,terminate,restart-fast,restart-immediate,stop-start
	run fleet -e -t 0 -p 18-18 -l 3-4 -k "$kinds"
	assert_success
	# every fence above the last on its slot, across the immediate
	# restart too (the acquisitions' commits are flushed)
	run "$SRC/tools/fleet-check" --require "$kinds" "$T/run"
	# (the whole report, should it fail)
	assert_success
	assert_line 'overlaps: 0'
	assert_line 'over MAX: 0'
	assert_line 'result: ok'
	# the partitioned holder was told (before its slot was granted
	# elsewhere: overlaps 0 above), whether or not the server let the
	# slot go before the run ended (at the heal, or after its own
	# keepalives: up to about 40 s)
	assert_line --regexp '^  partition 18s cut off h[0-9]: .* told after [0-9.]+ s, slot granted elsewhere (after|never in the run)'
	assert_cleaned_up
}

@test "fleet: a loss watcher killed, a holder frozen past --max-hold, a partition: each told, and its late writes fenced" {
	need_fleet
	run fleet -e -t 0 -H 15 -p 18-18 -k watcher-kill,freeze,partition
	assert_success
	run "$SRC/tools/fleet-check" --require watcher-kill,freeze,partition "$T/run"
	assert_success
	assert_line 'overlaps: 0'
	assert_line 'unfenced writes: 0'
	assert_line 'result: ok'
	assert_line --regexp '^load average: [0-9.]+ [0-9.]+ [0-9.]+ then [0-9.]+ [0-9.]+ [0-9.]+$'
	# the watcher killed: the command told by the kernel at once, not
	# when its session ended a second later
	assert_line --regexp '^  watcher-kill h[0-9] [0-9]+ slot [0-9]: told after 0\.[0-9]+ s, '
	# frozen past the hold: the slot went on with a larger fence, and the
	# holder was told when it ran again
	assert_line --regexp '^  freeze h[0-9] [0-9]+ slot [0-9]: told after [0-9.]+ s \([0-9.]+ s after the thaw\), slot granted on after [0-9.]+ s \(fence ([0-9]+), then ([0-9]+)\)$'
	[[ $(grep -E '^  freeze ' <<<"$output") =~ fence\ ([0-9]+),\ then\ ([0-9]+) ]]
	((BASH_REMATCH[2] > BASH_REMATCH[1]))
	# the partition: told as lost contact, not as the server's doing
	assert_line --regexp '^  partition 18s cut off h[0-9]: .* told after [0-9.]+ s, '
	assert_line --regexp '^loss messages: .*lost contact [1-9]'
	run grep -h 'lost contact with the server' "$T"/run/h*.err
	assert_output --regexp 'lost contact with the server \(its keepalives went unanswered\); the server frees the lock within about [0-9]+s: sent SIGTERM to PIDs [0-9]+'
	assert_cleaned_up
}

@test "fleet: TLS over the network: asked for by default, a server without it refused, verify-full against the run's CA" {
	need_fleet
	run fleet -C
	assert_success
	assert_line 'tls: no sslmode, over the network: TLS asked for: status 0 (want 0)'
	assert_line 'tls: verify-full with the run'\''s CA: status 0 (want 0)'
	assert_line --regexp '^tls: verify-full, a name the certificate does not bear: status 125 \(want 125\): .*does not match host name "db2\.example"$'
	assert_line --regexp '^tls: no sslmode, a server without TLS: refused: status 125 \(want 125\): .*server does not support SSL, but SSL was required$'
	assert_line 'tls: sslmode=disable, said so: plain text: status 0 (want 0)'
	assert_line 'tls: ok'
	assert_cleaned_up
}

@test "fleet: waiters drain through a role's connection limit: none over it, none failed, the server's CPU a job alike at 20 and 100" {
	need_fleet
	command -v openssl >/dev/null || skip "needs openssl"
	run fleet -D 200 -L 20,100
	assert_success
	assert_line --regexp '^drain: 200 waiters of slots -w URL 4, 100ms jobs, over 3 client hosts'
	assert_line --regexp '^limit 20: drained in [0-9.]+s, ideal 5\.0s, ratio [0-9.]+; peak connections ([0-9]|1[0-9]|20) \(limit 20\); done 200, failed 0; server CPU [0-9.]+s, [0-9.]+ms a job; load average [0-9./]+$'
	assert_line --regexp '^limit 100: .*; peak connections ([0-9]|[1-9][0-9]|100) \(limit 100\); done 200, failed 0; '
	# past the limit, waiting costs the server no full login a try
	[[ $(tail -n 1 <<<"$output") =~ ^server\ CPU\ a\ job\ at\ a\ limit\ of\ 20\ against\ 100:\ ([0-9.]+)$ ]]
	assert [ "$(awk -v r="${BASH_REMATCH[1]}" 'BEGIN { print (r <= 1.3) }')" = 1 ]
	assert_cleaned_up
}
