#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# shellcheck shell=bats
# The PostgreSQL backend against a real server: slots and mutex on session
# advisory locks, check/list/--json, -w (one connection a waiter, through
# restarts and connection limits), release when the holder dies, the
# command's job told once when the session is lost, LOCKBOX_FENCE,
# refusals (standby, pooler, unreachable, inverted keepalives, %00), many
# clients at once, and adaptive's state in a table on the server's clock,
# shared by every role, with expiry by ending the holder's session.
# Needs LOCKBOX_PG_URL (tools/pg-cluster start prints it; .ci/run sets it).

load test_helper


setup() {
	[[ -n ${LOCKBOX_PG_URL:-} ]] ||
		skip "no PostgreSQL server: set LOCKBOX_PG_URL (eval \"\$(tools/pg-cluster start)\")"
	# a build without libpq (the static musl one) has no helper to run
	[[ -z ${LOCKBOX_PG_HELPER:-} || -x $LOCKBOX_PG_HELPER ]] ||
		skip "this build has no PostgreSQL helper ($LOCKBOX_PG_HELPER)"
	lockbox_setup
	SRC=${LOCKBOX_SRCDIR:-$BATS_TEST_DIRNAME/..}
	# a lock of its own for every test, so tests never see each other
	NAME=t$BATS_TEST_NUMBER-$$-$RANDOM
	U="$LOCKBOX_PG_URL?lock=$NAME"
}

# sql QUERY: one value or row from the server, unaligned
sql() {
	psql "$LOCKBOX_PG_URL" -XAtq -c "$1"
}

# backend_of PID: the server session whose application_name names PID
backend_of() {
	sql "SELECT pid FROM pg_stat_activity WHERE application_name LIKE 'lockbox pid=$1 %'"
}

# queued PID N: at least N lock requests wait on the server; 2 (give up)
# when the waiter PID is gone, showing why
queued() {
	if ! kill -0 "$1" 2>/dev/null; then
		printf 'waiter %s exited: %s\n' "$1" "$(cat "$SPAWN_ERR")" >&2
		return 2
	fi
	(($(sql "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted") >= $2))
}

# queued_on OBJID: the one lock request waiting on the server is on that
# slot (a waiter of several slots withdraws it for a moment each time it
# looks at the others again)
queued_on() {
	[[ $(sql "SELECT string_agg(objid::text, ',') FROM pg_locks WHERE locktype = 'advisory' AND NOT granted") == "$1" ]]
}

none_queued() {
	(($(sql "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted") == 0))
}

need_superuser() {
	[[ $(sql "SELECT rolsuper FROM pg_roles WHERE rolname = current_user") == t ]] ||
		skip "the test's role is no superuser: it cannot make other roles"
}

# role_url ROLE [DB]: LOCKBOX_PG_URL as ROLE (made if missing, a plain login role), on DB
role_url() {
	[[ $LOCKBOX_PG_URL =~ ^(postgres(ql)?://)([^@/]*@)?([^/]*)/([^?]*)$ ]] || fail "unexpected URL"
	sql "DO \$\$BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$1')
		THEN CREATE ROLE $1 LOGIN; END IF; END\$\$"
	printf '%s%s@%s/%s\n' "${BASH_REMATCH[1]}" "$1" "${BASH_REMATCH[4]}" "${2:-${BASH_REMATCH[5]}}"
}

need_cluster() {
	[[ -n ${LOCKBOX_PG_DIR:-} ]] ||
		skip "stopping the server needs the cluster's directory (LOCKBOX_PG_DIR from tools/pg-cluster)"
}

# pg_down DIR: stop the server of cluster DIR (teardown starts it again
# if the test does not)
pg_down() {
	: >"$T/.down"
	"$SRC/tools/pg-cluster" down "$1" 3>&-
}

# pg_up DIR: start it again
pg_up() {
	"$SRC/tools/pg-cluster" up "$1" 3>&-
	rm -f "$T/.down"
}

pg_port() {
	local p=${LOCKBOX_PG_URL##*:}
	printf '%s\n' "${p%%/*}"
}

# A server starting up, as far as a client can tell: on 127.0.0.1:$1 it
# answers every connection with FATAL 57P03 ("the database system is
# starting up"), noting each in $2, after writing $2.ready.
# shellcheck disable=SC2016 # python's text
STARTING_SERVER='import socket, struct, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(16)
open(sys.argv[2] + ".ready", "w").close()
def read(c, n):
    b = b""
    while len(b) < n:
        m = c.recv(n - len(b))
        if not m:
            raise EOFError
        b += m
    return b
fields = b"SFATAL\0VFATAL\0C57P03\0Mthe database system is starting up\0\0"
while True:
    c, _ = s.accept()
    try:
        while True:
            n, code = struct.unpack("!ii", read(c, 8))
            read(c, n - 8)
            if code in (80877103, 80877104):   # SSL, GSS encryption: no
                c.sendall(b"N")
                continue
            c.sendall(b"E" + struct.pack("!i", 4 + len(fields)) + fields)
            with open(sys.argv[2], "a") as f:
                f.write("refused\n")
            break
    except (EOFError, OSError):
        pass
    c.close()'

# hold APPLET ARG...: APPLET ARG... sh -c HOLD_SCRIPT in the background
# (the command execs sleep 600 once it has its slot); HOLD_PID, HOLD_SLOT
hold() {
	start_holder_with "$@"
	# shellcheck disable=SC2153 # set by start_holder_with
	HOLD_PID=$HOLDER_PID
	# shellcheck disable=SC2034,SC2153 # for the tests; set by start_holder_with
	HOLD_SLOT=$HOLDER_SLOT
}

@test "slots: the command runs in place with LOCKBOX_SLOT and LOCKBOX_FENCE; check and list see it" {
	# shellcheck disable=SC2016 # expanded by the child shell
	run -7 --separate-stderr "$LOCKBOX" slots "$U" 3 sh -c \
		'echo "$$ $LOCKBOX_SLOT $LOCKBOX_FENCE"; "$1" slots "$2" check; "$1" slots "$2" list; exit 7' \
		sh "$LOCKBOX" "$U"
	# shellcheck disable=SC2154 # set by bats' run
	assert_equal "$stderr" ""
	read -r pid slot fence <<<"${lines[0]}"
	assert_equal "$slot" 1
	assert_regex "$fence" '^[0-9]+$'
	assert_equal "${lines[1]}" 1
	assert_regex "${lines[2]}" '^SLOT +PID +AGE +HOST +COMMAND$'
	assert_regex "${lines[3]}" "^1 +$pid +$AGE_RE +$(re_quote "$(hostname | cut -c1-16)") +watcher PID [0-9]+: sh\$"
	# released when the command ended
	run -0 "$LOCKBOX" slots "$U" check
	assert_output 0
	# every acquisition gets a larger fence
	# shellcheck disable=SC2016 # expanded by the child shell
	run -0 "$LOCKBOX" slots "$U" 3 sh -c 'echo "$LOCKBOX_FENCE"'
	assert [ "$output" -gt "$fence" ]
}

# bats test_tags=wait
@test "back to back: a run is not refused by the session of the run before, which the server ends a moment after its command" {
	local i busy=0 child
	for i in $(seq 100); do
		"$LOCKBOX" mutex "$U" true 2>"$T/err" || { busy=$((busy + 1)); cat "$T/err" >&2; }
	done
	assert_equal "$busy" 0
	# the moment made to last: a child of the command keeps the connection,
	# and the lock; the next run, its holder gone from this host, looks again
	# (queued on the server) and takes the lock when the child ends
	# shellcheck disable=SC2016 # expanded by the child shell
	run -0 "$LOCKBOX" mutex "$U" sh -c 'sleep 600 </dev/null >/dev/null 2>&1 3>&- & echo $!'
	child=$output
	track_pid "$child"
	spawn "$LOCKBOX" mutex "$U" true
	wait_for queued "$SPAWN_PID" 1
	kill "$child"
	reap "$SPAWN_PID"
	assert_equal "$REAP_STATUS" 0
	# a child that stays keeps the lock: refused after the look, naming the holder
	# shellcheck disable=SC2016 # expanded by the child shell
	run -0 "$LOCKBOX" mutex "$U" sh -c 'sleep 600 </dev/null >/dev/null 2>&1 3>&- & echo "$! $$"'
	read -r child pid <<<"$output"
	track_pid "$child"
	run -75 "$LOCKBOX" mutex "$U" true
	assert_output --partial "held by PID $pid "
}

@test "LOCKBOX_FENCE rises with each holder of a slot; a holder of another slot may hold a larger one meanwhile" {
	# shellcheck disable=SC2016 # expanded by the child shell
	local show='echo "$LOCKBOX_SLOT $LOCKBOX_FENCE" >"$1.tmp"; mv "$1.tmp" "$1"; exec sleep 600'
	spawn "$LOCKBOX" slots "$U" 2 sh -c "$show" sh "$T/a"
	local a=$SPAWN_PID
	wait_for test -s "$T/a"
	spawn "$LOCKBOX" slots "$U" 2 sh -c "$show" sh "$T/b"
	wait_for test -s "$T/b"
	local sa fa sb fb sc fc
	read -r sa fa <"$T/a"
	read -r sb fb <"$T/b"
	assert_equal "$sa $sb" "1 2"
	assert [ "$fb" -gt "$fa" ]
	stop_pid "$a"
	wait_for held_is "$U" 1
	spawn "$LOCKBOX" slots "$U" 2 sh -c "$show" sh "$T/c"
	wait_for test -s "$T/c"
	read -r sc fc <"$T/c"
	# slot 1's next holder has a larger fence than slot 1's last one...
	assert_equal "$sc" 1
	assert [ "$fc" -gt "$fa" ]
	# ...and than slot 2's, which still holds its slot rightly: a resource
	# must compare fences of one slot (lockbox-postgresql(7))
	assert [ "$fc" -gt "$fb" ]
	run -0 "$LOCKBOX" slots "$U" check
	assert_output 2
}

@test "slots: MAX holders at most, lowest free slot first, busy names the holders" {
	hold slots "$U" 2
	assert_equal "$HOLD_SLOT" 1
	local first=$HOLD_PID
	hold slots "$U" 2
	assert_equal "$HOLD_SLOT" 2
	run -75 --separate-stderr "$LOCKBOX" slots "$U" 2 touch "$T/ran"
	assert_regex "$stderr" "^slots: $(re_quote "$U"): all 2 slots busy: PID $first on [^ ]+ \\(sh, $AGE_RE\\), PID $HOLD_PID on [^ ]+ \\(sh, $AGE_RE\\)\$"
	# a client with a smaller MAX counts every holder: still busy
	run -75 --separate-stderr "$LOCKBOX" slots -q "$U" 1 touch "$T/ran"
	assert_equal "$stderr" ""
	# a larger one takes slot 3
	# shellcheck disable=SC2016 # expanded by the child shell
	run -0 "$LOCKBOX" slots "$U" 3 sh -c 'echo "$LOCKBOX_SLOT"'
	assert_output 3
	stop_pid "$first"
	wait_for held_is "$U" 1
	# shellcheck disable=SC2016 # expanded by the child shell
	run -0 "$LOCKBOX" slots "$U" 2 sh -c 'echo "$LOCKBOX_SLOT"'
	assert_output 1
	assert [ ! -e "$T/ran" ]
}

@test "mutex: busy names PID, host, command and age; -E and -q; mutex = slots 1" {
	hold mutex "$U"
	run -75 --separate-stderr "$LOCKBOX" mutex "$U" touch "$T/ran"
	assert_regex "$stderr" "^mutex: $(re_quote "$U"): held by PID $HOLD_PID on [^ ]+ \\(sh, $AGE_RE\\)\$"
	run -0 --separate-stderr "$LOCKBOX" mutex -qE 0 "$U" touch "$T/ran"
	assert_equal "$stderr" ""
	run -75 "$LOCKBOX" slots -q "$U" 1 touch "$T/ran"
	# postgres:// is the same server and the same lock
	run -75 "$LOCKBOX" mutex -q "postgres://${U#postgresql://}" touch "$T/ran"
	assert [ ! -e "$T/ran" ]
}

# bats test_tags=privilege
@test "check, list and --json" {
	LOCKBOX_HOST=host-a hold mutex "$U"
	run -0 --separate-stderr "$LOCKBOX" mutex --json "$U" check
	assert_output "{\"file\":\"$U\",\"held\":1}"
	run -0 --separate-stderr "$LOCKBOX" mutex "$U" list
	assert_regex "${lines[1]}" "^1 +$HOLD_PID +$AGE_RE +host-a +watcher PID [0-9]+: sh\$"
	run -0 --separate-stderr "$LOCKBOX" mutex --json "$U" list
	printf '%s\n' "$output" | valid_json
	assert_regex "$output" "^\\[\\{\"slot\":1,\"pid\":$HOLD_PID,\"uid\":$(id -u),\"age_seconds\":[0-9.]+,\"started\":[0-9]+,\"host\":\"host-a\",\"command\":\"sh\",\"mode\":\"exclusive\",\"watcher\":[0-9]+\\}\\]\$"
	stop_pid "$HOLD_PID"
	wait_for held_is "$U" 0
	run -0 "$LOCKBOX" mutex --json "$U" list
	assert_output "[]"
}

@test "kill -9 of the holder frees its slot: the server ends the session" {
	hold slots "$U" 1
	run -0 "$LOCKBOX" slots "$U" check
	assert_output 1
	kill -KILL "$HOLD_PID"
	wait_for held_is "$U" 0
	run -0 "$LOCKBOX" mutex "$U" true
}

# bats test_tags=wait
@test "-w: the waiter takes the slot as soon as the holder dies, queued on the server" {
	hold mutex "$U"
	# shellcheck disable=SC2016 # expanded by the child shell
	spawn "$LOCKBOX" mutex -w 60 "$U" sh -c 'echo "$LOCKBOX_SLOT" >"$1"' sh "$T/ran"
	local waiter=$SPAWN_PID
	# queued: a lock request of this lock waits on the server
	wait_for queued "$waiter" 1
	assert [ ! -e "$T/ran" ]
	stop_pid "$HOLD_PID"
	reap "$waiter"
	assert_equal "$REAP_STATUS" 0
	assert_equal "$(cat "$T/ran")" 1
}

# bats test_tags=wait
@test "-w with several slots: any freed slot wakes the waiter; a timeout says so" {
	hold slots "$U" 2
	local a=$HOLD_PID
	hold slots "$U" 2
	run -75 --separate-stderr "$LOCKBOX" slots -w 300ms "$U" 2 true
	assert_regex "$stderr" "^slots: $(re_quote "$U"): timed out after 300ms; all 2 slots busy: PID $a on [^ ]+ \\([^)]*\\), PID $HOLD_PID on [^ ]+ \\([^)]*\\)\$"
	# shellcheck disable=SC2016 # expanded by the child shell
	spawn "$LOCKBOX" slots -w 60 "$U" 2 sh -c 'echo "$LOCKBOX_SLOT" >"$1"' sh "$T/ran"
	local waiter=$SPAWN_PID
	# one connection, one request: on the lowest slot (no slot has a waiter yet)
	wait_for queued "$waiter" 1
	wait_for queued_on 1
	# the second holder goes first: the waiter, looking again, gets its slot
	stop_pid "$HOLD_PID"
	reap "$waiter"
	assert_equal "$REAP_STATUS" 0
	assert_equal "$(cat "$T/ran")" 2
	# its request on slot 1 was withdrawn
	wait_for none_queued
}

# bats test_tags=privilege,wait
@test "server restart (fast, immediate): a -w waiter connects again and takes the lock once the server is back" {
	need_cluster
	local mode waiter
	for mode in fast immediate; do
		rm -f "$T/ran"
		hold mutex "$U"
		# shellcheck disable=SC2016 # expanded by the child shell
		spawn "$LOCKBOX" mutex -w 60 "$U" sh -c 'echo ran >"$1"' sh "$T/ran"
		waiter=$SPAWN_PID
		wait_for queued "$waiter" 1
		"$SRC/tools/pg-cluster" restart "$LOCKBOX_PG_DIR" "$mode" 3>&-
		reap "$waiter"
		assert_equal "$REAP_STATUS" 0
		assert_equal "$(cat "$T/ran")" ran
		# the holder's command heard of its loss
		reap "$HOLD_PID"
		assert_equal "$REAP_STATUS" 143
	done
}

# bats test_tags=privilege
@test "LOCKBOX_FENCE is never handed out twice, even across a crash of the server (restart -m immediate)" {
	need_cluster
	need_superuser
	local mode i a b
	# a WAL writer that waits long: an acquisition's commit record that
	# nobody flushed would be lost with the server's memory
	sql "ALTER SYSTEM SET wal_writer_delay = '10s'" >/dev/null
	sql "SELECT pg_reload_conf()" >/dev/null
	for i in 1 2 3; do
		# shellcheck disable=SC2016 # expanded by the child shell
		a=$("$LOCKBOX" mutex "$U" sh -c 'echo "$LOCKBOX_FENCE"')
		"$SRC/tools/pg-cluster" restart "$LOCKBOX_PG_DIR" immediate 3>&-
		# shellcheck disable=SC2016 # expanded by the child shell
		b=$("$LOCKBOX" mutex "$U" sh -c 'echo "$LOCKBOX_FENCE"')
		[[ $a =~ ^[0-9]+$ && $b =~ ^[0-9]+$ ]] || fail "fences '$a', '$b'"
		((b > a)) || fail "round $i: fence $a, then $b after the crash"
	done
	sql "ALTER SYSTEM RESET wal_writer_delay" >/dev/null
	sql "SELECT pg_reload_conf()" >/dev/null
}

# bats test_tags=privilege,wait
@test "a start while the server is away tries again within -w; one that never reached it: 125" {
	need_cluster
	pg_down "$LOCKBOX_PG_DIR"
	run -125 --separate-stderr "$LOCKBOX" mutex -E 0 "$U" touch "$T/ran"
	assert_regex "$stderr" "^mutex: $(re_quote "$U"): cannot connect: .*refused"
	run -125 --separate-stderr "$LOCKBOX" mutex -E 0 -w 300ms "$U" touch "$T/ran"
	assert_regex "$stderr" "^mutex: $(re_quote "$U"): cannot connect: .*refused"
	# a server starting up: refused for now (57P03), and the waiter goes on
	spawn python3 -c "$STARTING_SERVER" "$(pg_port)" "$T/starting"
	local fake=$SPAWN_PID
	wait_for test -e "$T/starting.ready"
	# shellcheck disable=SC2016 # expanded by the child shell
	spawn "$LOCKBOX" mutex -w 60 "$U" sh -c 'echo ran >"$1"' sh "$T/ran"
	local waiter=$SPAWN_PID
	wait_for test -s "$T/starting"
	stop_pid "$fake"
	pg_up "$LOCKBOX_PG_DIR"
	reap "$waiter"
	assert_equal "$REAP_STATUS" 0
	assert_equal "$(cat "$T/ran")" ran
}

# bats test_tags=privilege,wait
@test "a waiter whose server goes away and stays away past the deadline: 75, naming the server" {
	need_cluster
	hold mutex "$U"
	# the wait must outlast the steps up to the server's stop, on a busy
	# machine too; at most 30 s, which reap's bound outlasts (one slow
	# start makes the pace a second)
	local w waiter
	w=$(paces_or 300 5)
	((w <= 30)) || w=30
	spawn "$LOCKBOX" mutex -w "$w" "$U" touch "$T/ran"
	waiter=$SPAWN_PID
	wait_for queued "$waiter" 1
	pg_down "$LOCKBOX_PG_DIR"
	reap "$waiter"
	assert_equal "$REAP_STATUS" 75
	assert_regex "$(cat "$SPAWN_ERR")" "^mutex: $(re_quote "$U"): timed out after $AGE_RE; the server is unreachable: .*refused"
	pg_up "$LOCKBOX_PG_DIR"
	assert [ ! -e "$T/ran" ]
}

# bats test_tags=privilege,wait
@test "one connection a waiter: under a role's connection limit waiters wait, and one refused a connection tries again" {
	need_superuser
	[[ -n ${LOCKBOX_PG_DIR:-} && -r $LOCKBOX_PG_DIR/log ]] || skip "the server's log is not at hand (LOCKBOX_PG_DIR)"
	local few before i w1 w2
	few="$(role_url lockbox_few)?lock=$NAME"
	sql "ALTER ROLE lockbox_few CONNECTION LIMIT 4"
	before=$(grep -c 'too many connections for role "lockbox_few"' "$LOCKBOX_PG_DIR/log" || true)
	local holders=()
	for i in 1 2 3; do
		hold slots "$few" 3
		holders+=("$HOLD_PID")
	done
	# shellcheck disable=SC2016 # expanded by the child shell
	spawn "$LOCKBOX" slots -w 60 "$few" 3 sh -c 'echo "$LOCKBOX_SLOT" >>"$1"' sh "$T/ran"
	w1=$SPAWN_PID
	wait_for queued "$w1" 1
	# the fifth connection is refused: this waiter tries again until one is free
	# shellcheck disable=SC2016 # expanded by the child shell
	spawn "$LOCKBOX" slots -w 60 "$few" 3 sh -c 'echo "$LOCKBOX_SLOT" >>"$1"' sh "$T/ran"
	w2=$SPAWN_PID
	wait_for refused_more "$before"
	kill -0 "$w2"
	for i in "${holders[@]}"; do
		stop_pid "$i"
	done
	reap "$w1"
	assert_equal "$REAP_STATUS" 0
	reap "$w2"
	assert_equal "$REAP_STATUS" 0
	assert_equal "$(wc -l <"$T/ran")" 2
}

# refused_more N: the server's log names more than N refusals of lockbox_few
refused_more() {
	(($(grep -c 'too many connections for role "lockbox_few"' "$LOCKBOX_PG_DIR/log" || true) > $1))
}

# count_lock_held KEY: a session holds the count lock (KEY, -1) of a lock
count_lock_held() {
	(($(sql "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = $1
		AND objid = 4294967295 AND objsubid = 2 AND granted") == 1))
}

# bats test_tags=wait
@test "a wait's lock_timeout ends with the wait: the session that then holds the slot keeps none" {
	hold mutex "$U"
	local waiter key w
	key=$(sql "SELECT classid FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid = $(backend_of "$HOLD_PID")")
	# the wait must outlast this case's steps up to the handoff, on a
	# busy machine too; at most 30 s, as above (and the count lock's
	# bound of 60 s outlasts the session that keeps it)
	w=$(paces_or 300 3)
	((w <= 30)) || w=30
	# shellcheck disable=SC2016 # expanded by the child shell
	spawn env LOCKBOX_TEST_PG_COUNT_STUCK=60 "$LOCKBOX" mutex -w "$w" "$U" sh -c 'echo ran >"$1"' sh "$T/ran"
	waiter=$SPAWN_PID
	wait_for queued "$waiter" 1
	# another session keeps the count lock for longer than the wait's
	# lock_timeout (the wait and a second): the waiter, handed the slot,
	# must wait for it to count the holders, however long its wait was
	spawn psql "$LOCKBOX_PG_URL" -XAtq -c "BEGIN" -c "SELECT pg_advisory_xact_lock($key, -1)" \
		-c "SELECT pg_sleep($w + 2.5)" -c "COMMIT"
	wait_for count_lock_held "$key"
	stop_pid "$HOLD_PID"
	reap "$waiter"
	assert_equal "$REAP_STATUS" 0
	assert_equal "$(cat "$T/ran")" ran
}

@test "a count lock another session keeps is waited for within a bound: then 75, saying so" {
	hold mutex "$U"
	local key
	key=$(sql "SELECT classid FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid = $(backend_of "$HOLD_PID")")
	stop_pid "$HOLD_PID"
	spawn psql "$LOCKBOX_PG_URL" -XAtq -c "BEGIN" -c "SELECT pg_advisory_xact_lock($key, -1)" \
		-c "SELECT pg_sleep(600)" -c "COMMIT"
	wait_for count_lock_held "$key"
	run -75 --separate-stderr env LOCKBOX_TEST_PG_COUNT_STUCK=300ms "$LOCKBOX" mutex "$U" touch "$T/ran"
	assert_equal "$stderr" "mutex: $U: another session kept the lock's count lock (advisory lock $key, -1) for 300ms"
	assert [ ! -e "$T/ran" ]
}

# A command that holds on: it writes its PID to $1.pid, then loops; TERM
# (and USR1) are written to $1, and TERM ends it with status 3.
# shellcheck disable=SC2016 # expanded by the command's shell
HOLD_ON='trap '\''echo TERM >"$1.tmp"; mv "$1.tmp" "$1"; exit 3'\'' TERM
trap '\''echo USR1 >"$1.tmp"; mv "$1.tmp" "$1"'\'' USR1
echo $$ >"$1.pid.tmp"; mv "$1.pid.tmp" "$1.pid"
while :; do sleep 0.05; done'

# Client keepalives that notice a lost connection within 3 s, for a short --max-hold
FAST_KEEPALIVES='&keepalives_idle=1&keepalives_interval=1&keepalives_count=1&tcp_user_timeout=1000'

# A command that records SIGTERM: it writes its sleep's PID to $1.pid, and
# on TERM stops the sleep and writes "TERM" to $1.
# shellcheck disable=SC2016 # expanded by the child shell
LOSS_SCRIPT='trap '\''kill $s; echo TERM >"$1.tmp"; mv "$1.tmp" "$1"; exit 0'\'' TERM
sleep 600 & s=$!; echo "$s" >"$1.pid.tmp"; mv "$1.pid.tmp" "$1.pid"; wait'

@test "connection loss: the command gets SIGTERM when its session is terminated" {
	spawn "$LOCKBOX" mutex "$U" sh -c "$LOSS_SCRIPT" sh "$T/term"
	local holder=$SPAWN_PID
	wait_for test -s "$T/term.pid"
	track_pid "$(cat "$T/term.pid")"
	assert_equal "$(sql "SELECT pg_terminate_backend($(backend_of "$holder"))")" t
	wait_for test -s "$T/term"
	assert_equal "$(cat "$T/term")" TERM
	reap "$holder"
	assert_equal "$REAP_STATUS" 0
	run -0 "$LOCKBOX" mutex "$U" check
	assert_output 0
}

# bats test_tags=wait
@test "connection loss: a -w waiter's command is told too (its watcher started while it waited)" {
	hold mutex "$U"
	spawn "$LOCKBOX" mutex -w 60 "$U" sh -c "$LOSS_SCRIPT" sh "$T/term"
	local waiter=$SPAWN_PID
	wait_for queued "$waiter" 1
	stop_pid "$HOLD_PID"
	wait_for test -s "$T/term.pid"
	track_pid "$(cat "$T/term.pid")"
	assert_equal "$(sql "SELECT pg_terminate_backend($(backend_of "$waiter"))")" t
	wait_for test -s "$T/term"
	assert_equal "$(cat "$T/term")" TERM
	reap "$waiter"
	assert_equal "$REAP_STATUS" 0
}

# A command that counts the signals $2 (a real-time one: each one sent is
# kept, none merges with another) it gets: it blocks them, writes a
# heartbeat (a count of its loops) to $1.beat until $1.count exists, then
# takes what is pending and writes how many to $1.
# shellcheck disable=SC2016 # python's text
COUNT_SIGNALS='import os, signal, sys, time
f, sig = sys.argv[1], int(sys.argv[2])
signal.pthread_sigmask(signal.SIG_BLOCK, [sig])
n = 0
while not os.path.exists(f + ".count"):
    n += 1
    with open(f + ".beat.tmp", "w") as o:
        o.write("%d\n" % n)
    os.rename(f + ".beat.tmp", f + ".beat")
    time.sleep(0.02)
got = 0
while signal.sigtimedwait([sig], 0) is not None:
    got += 1
with open(f + ".tmp", "w") as o:
    o.write("%d\n" % got)
os.rename(f + ".tmp", f)
time.sleep(600)'

# fin_in PID: a TCP socket of PID is in CLOSE_WAIT: the server's FIN came in
fin_in() {
	local l ino
	for l in /proc/"$1"/fd/*; do
		l=$(readlink "$l") || continue
		[[ $l == socket:\[*\] ]] || continue
		ino=${l#socket:[}
		ino=${ino%]}
		awk -v ino="$ino" '$10 == ino && $4 == "08" { f = 1 } END { exit !f }' /proc/net/tcp &&
			return 0
	done
	return 1
}

# pending PID SIG: signal SIG is pending for process PID
pending() {
	local mask
	mask=$(awk '$1 == "ShdPnd:" { print $2 }' "/proc/$1/status") || return 1
	(((0x$mask >> ($2 - 1)) & 1))
}

@test "--on-loss: one signal for one loss, not one for the server's message and one for its FIN" {
	local sig=$(($(kill -l RTMIN) + 6))
	spawn "$LOCKBOX" mutex --on-loss "$sig" "$U" python3 -c "$COUNT_SIGNALS" "$T/sig" "$sig"
	local holder=$SPAWN_PID
	wait_for test -s "$T/sig.beat"
	sql "SELECT pg_terminate_backend($(backend_of "$holder"))" >/dev/null
	# every signal the loss could raise has been raised once the FIN is
	# in and a signal is pending: then count them
	wait_for fin_in "$holder"
	wait_for pending "$holder" "$sig"
	: >"$T/sig.count"
	wait_for test -s "$T/sig"
	assert_equal "$(cat "$T/sig")" 1
	# the watcher says so once it has sent it
	wait_for grep -q "sent SIG" "$SPAWN_ERR"
	stop_pid "$holder"
	assert_regex "$(cat "$SPAWN_ERR")" "^mutex: $(re_quote "$U"): the server ended the session; its lock is free: sent SIG$sig to PIDs $holder\$"
}

@test "--on-loss tells the command's job: the children of a wrapper script too" {
	# shellcheck disable=SC2016 # expanded by the child shells
	local child='trap '\''echo TERM >"$1.tmp"; mv "$1.tmp" "$1"; exit 0'\'' TERM
echo $$ >"$1.pid.tmp"; mv "$1.pid.tmp" "$1.pid"
while :; do sleep 0.05; done'
	# shellcheck disable=SC2016 # expanded by the child shell
	spawn "$LOCKBOX" mutex "$U" sh -c 'sh -c "$1" sh "$2" & wait' sh "$child" "$T/child"
	local holder=$SPAWN_PID
	wait_for test -s "$T/child.pid"
	track_pid "$(cat "$T/child.pid")"
	sql "SELECT pg_terminate_backend($(backend_of "$holder"))" >/dev/null
	wait_for -t 10 test -s "$T/child"
	assert_equal "$(cat "$T/child")" TERM
	reap "$holder"
	assert_equal "$REAP_STATUS" 143
}

# watcher_of PID: the loss watcher of holder PID, by its title
watcher_of() {
	pgrep -f "^mutex: loss watcher for PID $1 "
}

@test "the loss watcher never holds the lock: stopped, it does not keep it past the command" {
	hold mutex "$U"
	local w
	w=$(watcher_of "$HOLD_PID")
	assert [ -n "$w" ]
	track_pid "$w"
	kill -STOP "$w"
	stop_pid "$HOLD_PID"
	wait_for held_is "$U" 0
	run -0 "$LOCKBOX" mutex "$U" true
	kill -CONT "$w"
	# and it leaves once the command has
	wait_for gone "$w"
}

@test "the loss watcher: titled for its holder, named in the holder's session; sent TERM it tells the job and stays; killed, the kernel tells the command" {
	spawn "$LOCKBOX" mutex --on-loss USR1 "$U" sh -c "$HOLD_ON" sh "$T/sig"
	local holder=$SPAWN_PID holder_err=$SPAWN_ERR w
	wait_for test -s "$T/sig.pid"
	w=$(watcher_of "$holder")
	assert [ -n "$w" ]
	track_pid "$w"
	# in a session of its own: a terminal's signals are the command's
	assert_equal "$(ps -o sid= -p "$w" | tr -d ' ')" "$w"
	# list's holder names it (the session's application_name)
	assert_regex "$(sql "SELECT application_name FROM pg_stat_activity WHERE pid = $(backend_of "$holder")")" \
		"^lockbox pid=$holder uid=[0-9]+ w=$w host="
	# and list shows it beside its holder, in text and JSON
	run -0 --separate-stderr "$LOCKBOX" mutex "$U" list
	assert_regex "${lines[1]}" "^1 +$holder +$AGE_RE +[^ ]+ +watcher PID $w: sh\$"
	run -0 --separate-stderr "$LOCKBOX" mutex --json "$U" list
	assert_regex "$output" "\"pid\":$holder,.*\"mode\":\"exclusive\",\"watcher\":$w\\}\\]\$"
	kill -TERM "$w"
	wait_for test -s "$T/sig"
	assert_equal "$(cat "$T/sig")" USR1
	# (its shell may say before or after it that its sleep got USR1 too)
	wait_for grep -q "was sent SIGTERM" "$holder_err"
	assert_regex "$(grep "was sent SIGTERM" "$holder_err")" "^mutex: $(re_quote "$U"): its loss watcher \\(PID $w\\) was sent SIGTERM by PID [0-9]+; the lock is held still: sent SIGUSR1 to PIDs $holder(,[0-9]+)*\$"
	kill -0 "$w"
	run -0 "$LOCKBOX" mutex "$U" check
	assert_output 1
	# killed, it cannot say so: the command hears it from the kernel
	rm "$T/sig"
	kill -KILL "$w"
	wait_for test -s "$T/sig"
	assert_equal "$(cat "$T/sig")" USR1
	stop_pid "$holder"
}

@test "--max-hold with a server: shorter than the client's keepalive bound, or longer than a session may idle: one line, 125, nothing taken" {
	run -125 --separate-stderr "$LOCKBOX" mutex --max-hold 5s "$U" touch "$T/ran"
	assert_equal "$stderr" "mutex: $U: --max-hold 5s is not longer than the 13s this client takes to notice a lost connection (its keepalives)"
	run -125 --separate-stderr "$LOCKBOX" slots --max-hold 30d "$U" 2 touch "$T/ran"
	assert_equal "$stderr" "slots: $U: --max-hold 30d is longer than the server keeps an idle session: at most 24d19h"
	run -0 "$LOCKBOX" mutex "$U" check
	assert_output 0
	assert [ ! -e "$T/ran" ]
	# the bound is the URL's keepalives': 3s here
	run -0 --separate-stderr "$LOCKBOX" mutex --max-hold 4s "$U$FAST_KEEPALIVES" touch "$T/ran"
	assert [ -e "$T/ran" ]
	run -125 --separate-stderr "$LOCKBOX" mutex --max-hold 3s "$U$FAST_KEEPALIVES" true
	assert_regex "$stderr" "--max-hold 3s is not longer than the 3s this client takes"
}

# bats test_tags=wait
@test "--max-hold: a holder frozen past it (its watcher too) loses the lock to the server; the next fence is larger; told when it runs again" {
	local t0 holder w f1 f2
	t0=$EPOCHREALTIME
	# shellcheck disable=SC2016 # expanded by the command's shell
	spawn "$LOCKBOX" mutex --max-hold 4s "$U$FAST_KEEPALIVES" sh -c \
		'echo "$LOCKBOX_FENCE" >"$1.fence"; '"$HOLD_ON" sh "$T/held"
	holder=$SPAWN_PID
	local holder_err=$SPAWN_ERR
	wait_for test -s "$T/held.pid"
	w=$(watcher_of "$holder")
	assert [ -n "$w" ]
	track_pid "$w"
	# a frozen host: the holder and its watcher stopped
	kill -STOP "$holder" "$w"
	# shellcheck disable=SC2016 # expanded by the waiter's sh
	run -0 "$LOCKBOX" mutex -w 60 "$U" sh -c 'echo "$LOCKBOX_FENCE"'
	f1=$(cat "$T/held.fence") f2=$output
	assert [ "$f2" -gt "$f1" ]
	# not before the hold and its grace
	assert [ "$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { print (b - a >= 5) }')" = 1 ]
	kill -CONT "$w" "$holder"
	reap "$holder"
	assert_equal "$REAP_STATUS" 3
	# (the watcher says so after it has signalled: the line may come after the end)
	wait_for grep -q "maximum hold" "$holder_err"
	assert_regex "$(grep "maximum hold" "$holder_err")" "^mutex: $(re_quote "$U$FAST_KEEPALIVES"): held for its maximum hold, 4s; the server ended the session; its lock is free: sent SIGTERM to PIDs $holder(,[0-9]+)*\$"
}

# bats test_tags=wait
@test "--max-hold: a -w waiter's hold counts from its take; at the hold its job is told first, the server ends the session a grace later" {
	hold mutex "$U"
	spawn "$LOCKBOX" mutex -w 60 --max-hold 4s "$U$FAST_KEEPALIVES" sh -c "$HOLD_ON" sh "$T/held"
	local waiter=$SPAWN_PID waiter_err=$SPAWN_ERR
	wait_for queued "$waiter" 1
	stop_pid "$HOLD_PID"
	wait_for test -s "$T/held.pid"
	reap "$waiter"
	assert_equal "$REAP_STATUS" 3
	assert_equal "$(cat "$T/held")" TERM
	wait_for grep -q "maximum hold" "$waiter_err"
	assert_regex "$(grep "maximum hold" "$waiter_err")" "^mutex: $(re_quote "$U$FAST_KEEPALIVES"): held for its maximum hold, 4s; the server ends the session in about 1s: sent SIGTERM to PIDs $waiter(,[0-9]+)*\$"
}

# bats test_tags=wait
@test "a full role without -w is busy: 75 and libpq's reason, -E picks the status, -q says nothing; nothing runs" {
	need_superuser
	local few
	few="$(role_url lockbox_full)?lock=$NAME"
	sql "ALTER ROLE lockbox_full CONNECTION LIMIT 1"
	hold slots "$few" 2
	run -75 --separate-stderr "$LOCKBOX" slots "$few" 2 touch "$T/ran"
	assert_regex "$stderr" "^slots: $(re_quote "$few"): every connection the server allows is taken: connection to server at \"127\\.0\\.0\\.1\", port [0-9]+ failed: FATAL:  too many connections for role \"lockbox_full\"\$"
	run -0 --separate-stderr "$LOCKBOX" slots -E 0 "$few" 2 touch "$T/ran"
	assert_regex "$stderr" "too many connections for role"
	run -0 --separate-stderr "$LOCKBOX" slots -q -E 0 "$few" 2 touch "$T/ran"
	assert_equal "$stderr" ""
	run -75 --separate-stderr "$LOCKBOX" slots -w 200ms "$few" 2 touch "$T/ran"
	assert_regex "$stderr" "^slots: $(re_quote "$few"): timed out after 200ms; every connection the server allows is taken"
	assert [ ! -e "$T/ran" ]
}

# gate_of PID: the gate's file (lockbox-postgresql(7), Waiting) that the
# waiter PID has open and holds now; not another's (CI's lanes run this
# file beside each other, each with a server and so a gate of its own)
gate_of() {
	local fd f id
	for fd in /proc/"$1"/fd/*; do
		f=$(readlink "$fd") || continue
		[[ $f == */lockbox-pg-*.lock ]] || continue
		id=$(lock_id "$f") || continue
		awk -v id="$id" '$2 != "->" && $6 == id { f = 1 } END { exit !f }' /proc/locks &&
			printf '%s\n' "$f" && return 0
	done
	return 1
}

# bats test_tags=wait
@test "waiters a full role refuses take turns at this host's gate: one tries again, the others queue without a login" {
	need_superuser
	local few gate i waiters=()
	few="$(role_url lockbox_gate)?lock=$NAME"
	sql "ALTER ROLE lockbox_gate CONNECTION LIMIT 2"
	hold slots "$few" 4
	local h1=$HOLD_PID
	hold slots "$few" 4
	# the first refused waiter takes the gate and tries there
	# shellcheck disable=SC2016 # expanded by the child shell
	spawn "$LOCKBOX" slots -w 60 "$few" 4 sh -c 'echo "$LOCKBOX_SLOT" >>"$1"' sh "$T/ran"
	waiters+=("$SPAWN_PID")
	wait_for gate_of "$SPAWN_PID"
	gate=$(gate_of "$SPAWN_PID")
	# the others queue for it in the kernel, without a login of their own
	for i in 1 2 3; do
		# shellcheck disable=SC2016 # expanded by the child shell
		spawn "$LOCKBOX" slots -w 60 "$few" 4 sh -c 'echo "$LOCKBOX_SLOT" >>"$1"' sh "$T/ran"
		waiters+=("$SPAWN_PID")
	done
	wait_for waiting_on "$gate" 3
	stop_pid "$h1"
	stop_pid "$HOLD_PID"
	for i in "${waiters[@]}"; do
		reap "$i"
		assert_equal "$REAP_STATUS" 0
	done
	assert_equal "$(wc -l <"$T/ran")" 4
	# each let the next one in once it had its connection
	assert_equal "$(lock_waiters "$gate")" 0
}

# the fencing example, as printed in lockbox-postgresql(7) and README.md
fence_example() {
	awk '/^Five lines of shell/ { on = 1 } on && /^\.Bd -literal/ { inb = 1; next }
		inb && /^\.Ed/ { exit } inb' "$SRC/man/lockbox-postgresql.7.in" >"$T/fenced-write"
	awk '/^five lines make a file/ { on = 1 } on && /^```sh$/ { inb = 1; next }
		inb && /^```$/ { exit } inb' "$SRC/README.md" >"$T/fenced-write.readme"
}

# bats test_tags=privilege,wait
@test "fencing: the five lines of lockbox-postgresql(7) and README.md, as printed, refuse the late write of a holder that lost its lock" {
	fence_example
	assert_equal "$(wc -l <"$T/fenced-write")" 5
	run -0 cmp "$T/fenced-write" "$T/fenced-write.readme"
	chmod +x "$T/fenced-write"
	# a holder that takes no notice of its loss (--on-loss none) and writes late
	# shellcheck disable=SC2016 # expanded by the holder's sh
	spawn "$LOCKBOX" mutex --on-loss none "$U" sh -c 'echo first | "$1" "$2" && echo "$LOCKBOX_FENCE" >"$2.f1"
		while [ ! -e "$2.go" ]; do sleep 0.05; done; echo late | "$1" "$2"' sh "$T/fenced-write" "$T/store"
	local holder=$SPAWN_PID holder_err=$SPAWN_ERR
	wait_for test -s "$T/store.f1"
	assert_equal "$(sql "SELECT pg_terminate_backend($(backend_of "$holder"))")" t
	# the next holder writes with a larger fence
	# shellcheck disable=SC2016 # expanded by the child sh
	run -0 "$LOCKBOX" mutex -w 30 "$U" sh -c 'echo second | "$1" "$2" && echo "$LOCKBOX_FENCE"' sh "$T/fenced-write" "$T/store"
	local f2=$output
	: >"$T/store.go"
	reap "$holder"
	assert_equal "$REAP_STATUS" 1
	assert_equal "$(cat "$holder_err")" "fence $(cat "$T/store.f1") < $f2: refused"
	assert_equal "$(cat "$T/store")" second
}

# bats test_tags=privilege
@test "server restart: the command gets SIGTERM; the lock is free once the server is back" {
	[[ -n ${LOCKBOX_PG_DIR:-} ]] ||
		skip "restarting needs the cluster's directory (LOCKBOX_PG_DIR from tools/pg-cluster)"
	spawn "$LOCKBOX" mutex "$U" sh -c "$LOSS_SCRIPT" sh "$T/term"
	local holder=$SPAWN_PID
	wait_for test -s "$T/term.pid"
	track_pid "$(cat "$T/term.pid")"
	"$SRC/tools/pg-cluster" restart "$LOCKBOX_PG_DIR" 3>&-
	wait_for test -s "$T/term"
	reap "$holder"
	assert_equal "$REAP_STATUS" 0
	run -0 "$LOCKBOX" mutex "$U" check
	assert_output 0
}

@test "--on-loss USR1 picks the signal; --on-loss none sends nothing" {
	# shellcheck disable=SC2016 # expanded by the child shell
	spawn "$LOCKBOX" mutex --on-loss USR1 "$U" sh -c \
		'trap '\''echo USR1 >"$1"; exit 0'\'' USR1; echo ready >"$1.ready"; while :; do sleep 0.05; done' sh "$T/sig"
	local holder=$SPAWN_PID
	wait_for test -s "$T/sig.ready"
	sql "SELECT pg_terminate_backend($(backend_of "$holder"))" >/dev/null
	wait_for test -s "$T/sig"
	reap "$holder"
	hold mutex --on-loss none "$U"
	sql "SELECT pg_terminate_backend($(backend_of "$HOLD_PID"))" >/dev/null
	wait_for held_is "$U" 0
	# the lock is gone, the command runs on: that is what none means
	kill -0 "$HOLD_PID"
	run -125 --separate-stderr "$LOCKBOX" mutex --on-loss BOGUS "$U" true
	assert_equal "$stderr" "mutex: invalid signal 'BOGUS': expected none, a name such as TERM, or a number
Try 'lockbox mutex --help'."
}

# bats test_tags=wait
@test "unreachable server: 125, never turned into a skip by -E" {
	local port
	port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	local bad="postgresql://nobody@127.0.0.1:$port/postgres?lock=x"
	run -125 --separate-stderr "$LOCKBOX" mutex -E 0 "$bad" touch "$T/ran"
	assert_regex "$stderr" "^mutex: $(re_quote "$bad"): cannot connect: .*(refused|failed)"
	run -125 --separate-stderr "$LOCKBOX" slots -q -E 0 -w 1 "$bad" 2 touch "$T/ran"
	run -125 --separate-stderr "$LOCKBOX" slots "$bad" check
	assert [ ! -e "$T/ran" ]
}

@test "bad targets: no lock=NAME, an empty name, a password kept out of messages" {
	run -125 --separate-stderr "$LOCKBOX" mutex "$LOCKBOX_PG_URL" true
	assert_equal "$stderr" "mutex: $LOCKBOX_PG_URL: no lock=NAME in the URL (postgresql://HOST/DB?lock=NAME)"
	run -125 --separate-stderr "$LOCKBOX" mutex "$LOCKBOX_PG_URL?lock=" true
	assert_equal "$stderr" "mutex: $LOCKBOX_PG_URL?lock=: invalid lock name"
	run -125 --separate-stderr "$LOCKBOX" mutex "postgresql://u:secret@127.0.0.1:1/db" true
	assert_equal "$stderr" "mutex: postgresql://u:***@127.0.0.1:1/db: no lock=NAME in the URL (postgresql://HOST/DB?lock=NAME)"
	# nor in the busy message and --json (the test server trusts any password)
	hold mutex "$U"
	local pw="${LOCKBOX_PG_URL/@/:secret@}?lock=$NAME"
	run -75 --separate-stderr "$LOCKBOX" mutex "$pw" true
	assert_regex "$stderr" "^mutex: $(re_quote "${U/@/:***@}"): held by PID $HOLD_PID "
	run -0 --separate-stderr "$LOCKBOX" mutex --json "$pw" check
	assert_output "{\"file\":\"${U/@/:***@}\",\"held\":1}"
}

@test "a lock name with %00 is refused: it would be the name cut there" {
	run -125 --separate-stderr "$LOCKBOX" mutex "$U%00x" touch "$T/ran"
	assert_equal "$stderr" "mutex: $U%00x: invalid lock name"
	run -125 --separate-stderr "$LOCKBOX" slots "$LOCKBOX_PG_URL?lock=%00" check
	assert_equal "$stderr" "slots: $LOCKBOX_PG_URL?lock=%00: invalid lock name"
	assert [ ! -e "$T/ran" ]
}

@test "a holder's age that the role may not read is shown as unknown, not as 0" {
	need_superuser
	local weak
	weak="$(role_url lockbox_weak)?lock=$NAME"
	hold mutex "$U"
	run -0 --separate-stderr "$LOCKBOX" mutex "$weak" list
	assert_regex "${lines[1]}" "^1 +$HOLD_PID +\\? +[^ ]+ +watcher PID [0-9]+: sh\$"
	run -0 --separate-stderr "$LOCKBOX" mutex --json "$weak" list
	printf '%s\n' "$output" | valid_json
	assert_regex "$output" "^\\[\\{\"slot\":1,\"pid\":$HOLD_PID,\"uid\":[0-9]+,\"age_seconds\":null,\"started\":null,\"host\":"
	run -75 --separate-stderr "$LOCKBOX" mutex "$weak" true
	assert_regex "$stderr" "^mutex: $(re_quote "$weak"): held by PID $HOLD_PID on [^ ]+ \\(sh, age unknown\\)\$"
	# the holder's own role sees it
	run -0 "$LOCKBOX" mutex "$U" list
	assert_regex "${lines[1]}" "^1 +$HOLD_PID +$AGE_RE +"
}

@test "secret parameters (password=, sslpassword=) are never printed: messages, list, --json, adaptive status" {
	local pw="$U&password=pw1&sslpassword=pw2" shown="$U&password=***&sslpassword=***"
	local db="$LOCKBOX_PG_URL?sslpassword=pw2&password=pw1" dbshown="$LOCKBOX_PG_URL?sslpassword=***&password=***"
	hold mutex "$pw"
	run -75 --separate-stderr "$LOCKBOX" mutex "$pw" true
	assert_regex "$stderr" "^mutex: $(re_quote "$shown"): held by PID $HOLD_PID "
	run -0 --separate-stderr "$LOCKBOX" mutex --json "$pw" check
	assert_output "{\"file\":\"$shown\",\"held\":1}"
	run -0 --separate-stderr "$LOCKBOX" slots "$pw" list
	refute_output --partial pw1
	refute_output --partial pw2
	run -0 --separate-stderr "$LOCKBOX" adaptive -d "$db" "a$NAME" true
	run -0 --separate-stderr "$LOCKBOX" adaptive -d "$db" status "a$NAME"
	assert_line "  server         $dbshown&lock=a$NAME"
	run -0 --separate-stderr "$LOCKBOX" adaptive -d "$db" --json status "a$NAME"
	assert_output --partial "\"server\":\"$dbshown&lock=a$NAME\""
	refute_output --partial pw1
	refute_output --partial pw2
}

@test "keepalives: a client slower than the server to notice a loss is refused" {
	run -125 --separate-stderr "$LOCKBOX" mutex "$U&keepalives_idle=100" touch "$T/ran"
	assert_regex "$stderr" "the server would drop a silent connection \\(and free the lock\\) after 40s, before this client notices"
	run -125 --separate-stderr "$LOCKBOX" mutex "$U&keepalives=0" touch "$T/ran"
	assert_regex "$stderr" "keepalives off"
	# the server's side set by the user, longer than the client's: fine
	run -0 "$LOCKBOX" mutex "$U&options=-c%20tcp_keepalives_idle%3D60" touch "$T/ran"
	assert [ -e "$T/ran" ]
	# the holder's session runs with the server-side keepalives lockbox set
	# shellcheck disable=SC2016 # expanded by the child shell
	run -0 "$LOCKBOX" mutex "$U" sh -c 'psql "$1" -XAtqc "SHOW tcp_keepalives_idle" >/dev/null; echo ok' sh "$LOCKBOX_PG_URL"
}

@test "a standby is refused: its advisory locks are not the primary's" {
	command -v pg_basebackup >/dev/null || skip "pg_basebackup is not installed"
	local env
	env=$("$SRC/tools/pg-cluster" standby "$LOCKBOX_PG_URL")
	eval "$env"
	# teardown stops it if the test fails (bats runs tests in subshells)
	printf '%s\n' "$LOCKBOX_PG_STANDBY_DIR" >"$T/.standby"
	run -125 --separate-stderr "$LOCKBOX" mutex -E 0 "$LOCKBOX_PG_STANDBY_URL?lock=$NAME" touch "$T/ran"
	assert_regex "$stderr" "the server is a standby \\(in recovery\\)"
	assert [ ! -e "$T/ran" ]
	"$SRC/tools/pg-cluster" stop "$LOCKBOX_PG_STANDBY_DIR"
	rm "$T/.standby"
}

# setup_blocks: the literal blocks of lockbox-postgresql(7)'s Setting up,
# unescaped, one file each: $T/setup.1, $T/setup.2, ...
setup_blocks() {
	awk -v out="$T/setup" '
		/^\.S[hs] / { on = $0 == ".Ss Setting up"; next }
		on && /^\.Bd -literal/ { inb = 1; f = out "." ++n; next }
		inb && /^\.Ed/ { inb = 0; close(f); next }
		inb { print > f }' "$SRC/man/lockbox-postgresql.7.in"
	sed -i -e 's/\\e/\\/g' -e 's/\\&//g' "$T"/setup.*
}

# bats test_tags=privilege
@test "Setting up: the role, database, grant and ~/.pgpass of lockbox-postgresql(7), as printed, on a server that asks for passwords" {
	local dir env url owner port line
	# a server of its own (in a directory its owner, nobody for root, can
	# reach), whose pg_hba.conf asks the page's role for its password
	env=$("$SRC/tools/pg-cluster" start 3>&-) || fail "tools/pg-cluster start failed"
	dir=$(sed -n 's/^LOCKBOX_PG_DIR=//p' <<<"$env")
	# teardown stops it, as it stops a standby
	printf '%s\n' "$dir" >"$T/.standby"
	url=$(sed -n 's/^LOCKBOX_PG_URL=//p' <<<"$env")
	owner=${url#postgresql://}
	owner=${owner%%@*}
	port=$(cat "$dir/port")
	{ printf 'host all lockbox 127.0.0.1/32 scram-sha-256\n'; cat "$dir/data/pg_hba.conf"; } >"$T/hba"
	cat "$T/hba" >"$dir/data/pg_hba.conf"
	"$SRC/tools/pg-cluster" restart "$dir" 3>&-
	setup_blocks
	assert [ -s "$T/setup.1" ]
	assert [ -s "$T/setup.2" ]
	assert [ ! -e "$T/setup.3" ]
	# The server's commands, as its superuser: "sudo -u postgres psql" is
	# psql as the cluster's owner on its address; each line as printed
	# otherwise.
	while IFS= read -r line; do
		assert_regex "$line" '^sudo -u postgres psql '
		PGHOST=127.0.0.1 PGPORT=$port PGUSER=$owner PGDATABASE=postgres \
			run -0 bash -c "psql -X ${line#sudo -u postgres psql }"
	done <"$T/setup.1"
	# The client's, as a user whose home is new: db.example.com is the server
	sed -e "s/db\.example\.com:5432/127.0.0.1:$port/g" -e "s/db\.example\.com/127.0.0.1:$port/g" \
		"$T/setup.2" >"$T/client.sh"
	mkdir "$T/home" "$T/bin"
	ln -s "$LOCKBOX" "$T/bin/mutex"
	# the first try, with no password: libpq's words, 125
	HOME=$T/home PATH=$T/bin:$PATH run -125 --separate-stderr bash -c "$(tail -n 1 "$T/client.sh")"
	assert_regex "$stderr" "cannot connect: connection to server at \"127\\.0\\.0\\.1\", port $port failed: fe_sendauth: no password supplied\$"
	HOME=$T/home PATH=$T/bin:$PATH run -0 --separate-stderr bash -e "$T/client.sh"
	assert_output ok
	assert_stderr ""
	# adaptive keeps its state there too: the grant on public lets the role make its table
	HOME=$T/home run -0 --separate-stderr "$LOCKBOX" adaptive -d "postgresql://lockbox@127.0.0.1:$port/ops" hello echo ran
	assert_output ran
}

# bats test_tags=privilege
@test "a pooler (PgBouncer, transaction pooling) is refused" {
	local bouncer
	bouncer=$(type -P pgbouncer || ls /usr/sbin/pgbouncer 2>/dev/null) ||
		skip "pgbouncer is not installed"
	local port dir user host pgport
	port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	user=${LOCKBOX_PG_URL#postgresql://}
	user=${user%%@*}
	host=${LOCKBOX_PG_URL#*@}
	pgport=${host#*:}
	pgport=${pgport%%/*}
	# pgbouncer refuses to run as root; nobody cannot enter the test's dir
	dir=$(mktemp -d "${TMPDIR:-/tmp}/lockbox-pgbouncer.XXXXXX")
	printf '%s\n' "$dir" >>"$T/.cleanup"
	chmod 0755 "$dir"
	cat >"$dir/pgbouncer.ini" <<EOF
[databases]
postgres = host=127.0.0.1 port=$pgport dbname=postgres user=$user
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir =
auth_type = any
pool_mode = transaction
logfile = $dir/log
pidfile = $dir/pid
EOF
	chmod -R a+rwX "$dir"
	local as=()
	(($(id -u) == 0)) && as=(runuser -u nobody --)
	spawn "${as[@]}" "$bouncer" "$dir/pgbouncer.ini"
	wait_for test -s "$dir/pid"
	track_pid "$(cat "$dir/pid")"
	run -125 --separate-stderr "$LOCKBOX" mutex -E 0 "postgresql://$user@127.0.0.1:$port/postgres?lock=$NAME" touch "$T/ran"
	assert_regex "$stderr" "goes through a pooler"
	assert [ ! -e "$T/ran" ]
}

@test "without the helper: a clear 125" {
	[[ -x ${LOCKBOX_PG_HELPER:-} ]] || skip "no lockbox-pg in this build"
	LOCKBOX_PG_HELPER=$T/missing run -125 --separate-stderr "$LOCKBOX" mutex "$U" true
	assert_regex "$stderr" "^mutex: $(re_quote "$U"): cannot run the PostgreSQL helper $(re_quote "$T/missing"): No such file or directory \\(it comes with the package lockbox-postgresql\\)\$"
}

@test "the shell library takes lock files only, and says so to a server's URL" {
	# shellcheck disable=SC2016 # expanded by the child bash
	run -125 --separate-stderr bash -c '. "$("$1" --shell-lib)"; acquire_mutex "$2"' bash "$LOCKBOX" "$U"
	assert_equal "$stderr" "mutex: the library takes lock files only, not a server's URL; for a lock on a server, run: lockbox mutex URL COMMAND"
	# shellcheck disable=SC2016 # expanded by the child bash
	run -125 --separate-stderr bash -c '. "$("$1" --shell-lib)"; acquire_slot "$2" 2' bash "$LOCKBOX" "$U"
	assert_equal "$stderr" "slots: the library takes lock files only, not a server's URL; for a lock on a server, run: lockbox slots URL COMMAND"
}

# A holder in the simulation: marks itself in, checks the others, marks out.
# shellcheck disable=SC2016 # expanded by the child shell
SIM_SCRIPT='d=$1
mkdir "$d/slot.$LOCKBOX_SLOT" 2>/dev/null || echo "slot $LOCKBOX_SLOT twice" >>"$d/bad"
: >"$d/in.$$"
set -- "$d"/in.*
echo $# >>"$d/counts"
rm -f "$d/in.$$"
rmdir "$d/slot.$LOCKBOX_SLOT"'

# bats test_tags=wait
@test "ten hosts looping on slots URL 4 never run more than 4 at once" {
	local d=$T/sim i pids=() rounds=15
	mkdir "$d"
	for i in $(seq 1 10); do
		(
			for _ in $(seq 1 "$rounds"); do
				LOCKBOX_HOST=host-$i "$LOCKBOX" slots -q -w 60 "$U" 4 sh -c "$SIM_SCRIPT" sh "$d" ||
					echo "host-$i: status $?" >>"$d/bad"
			done
		) 3>&- &
		pids+=("$!")
		track_pid "$!"
	done
	for i in "${pids[@]}"; do
		wait "$i"
	done
	assert [ ! -e "$d/bad" ]
	assert_equal "$(wc -l <"$d/counts")" $((10 * rounds))
	assert_equal "$(sort -n "$d/counts" | tail -n 1 | awk '{ print ($1 <= 4) }')" 1
	run -0 "$LOCKBOX" slots "$U" check
	assert_output 0
}

# ad ARG...: adaptive with its state on the server and the test's log
ad() {
	"$LOCKBOX" adaptive -d "$LOCKBOX_PG_URL" --log "$T/log" "$@"
}

# ad_status NAME: the text status of atom NAME
ad_status() {
	"$LOCKBOX" adaptive -d "$LOCKBOX_PG_URL" status "$1"
}

overdue_pg() {
	ad_status "$1" | grep -q '^  state  *overdue$'
}

# stored NAME OFFSET BYTES: an unsigned little-endian field of the atom
# area the server keeps for NAME (layout in atom.h and adaptive(1))
stored() {
	sql "SELECT sum(get_byte(area, $2 + i)::numeric * 256::numeric ^ i)::numeric(30, 0)
		FROM lockbox_atom, generate_series(0, $3 - 1) i WHERE name = '$1'"
}

# A command for a hung run: writes its PID to $1, ignores TERM, loops.
# shellcheck disable=SC2016 # expanded by the child shell
HUNG_SCRIPT='trap "" TERM; echo $$ >"$1.tmp"; mv "$1.tmp" "$1"; while :; do sleep 1; done'

@test "adaptive: the state is a row of the server's table; too soon is 75; status counts the runs" {
	run -3 ad -e 1h "$NAME" sh -c 'exit 3'
	run -75 --separate-stderr ad -e 1h "$NAME" touch "$T/ran"
	assert_regex "$stderr" "^adaptive: $NAME: too soon; next run allowed in (1h|59m[0-9]+s)\$"
	assert [ ! -e "$T/ran" ]
	# one row under the lock's name: the atom area, as a lock file keeps it
	assert_equal "$(sql "SELECT length(area) || ' ' || lock_key FROM lockbox_atom WHERE name = '$NAME'")" \
		"4032 $(sql "SELECT DISTINCT lock_key FROM lockbox_atom WHERE name = '$NAME'")"
	assert_equal "$(stored "$NAME" 92 4)" 1
	run -0 ad -e 0 "$NAME" touch "$T/ran"
	assert [ -e "$T/ran" ]
	run -0 --separate-stderr ad_status "$NAME"
	assert_line "$NAME"
	assert_regex "$output" $'\n  state +idle\n'
	assert_regex "$output" $'\n  last status +0\n'
	assert_regex "$output" $'\n  runs +2 \\(0 expired\\); last 2 completed: '
	assert_regex "$output" $'\n  server +'"$(re_quote "$LOCKBOX_PG_URL?lock=$NAME")"'$'
	# with no NAME, every atom of the database
	run -0 "$LOCKBOX" adaptive -d "$LOCKBOX_PG_URL" status
	assert_line "$NAME"
	run -0 "$LOCKBOX" adaptive -d "$LOCKBOX_PG_URL" --json status "$NAME"
	printf '%s\n' "$output" | valid_json
	assert_regex "$output" '"runs":2,"expiries":0'
	# (next= is what is left of the hour: 59m58s on a host slow enough)
	run -0 sed -E 's/^[0-9TZ:-]+ adaptive\[[0-9]+\] [^ ]+ //; s/ (pid|duration|command)=.*//
		s/next=59m[0-9]+s$/next=1h/' "$T/log"
	assert_output "ran
finished status=3
skipped-too-soon next=1h
ran
finished status=0"
}

@test "adaptive: a hung run on another host is expired by ending its session; its supervisor stops the command" {
	spawn env LOCKBOX_HOST=far-host "$LOCKBOX" adaptive -d "$LOCKBOX_PG_URL" --log "$T/log" \
		-e 0 -x 1s -g 300ms "$NAME" sh -c "$HUNG_SCRIPT" sh "$T/old"
	local old=$SPAWN_PID old_err=$SPAWN_ERR
	wait_for holder_ready "$T/old" "$old"
	track_pid "$(cat "$T/old")"
	run -75 --separate-stderr ad -e 0 -x 1h "$NAME" touch "$T/ran"
	assert_regex "$stderr" "^adaptive: $NAME: already running \\(PID $old on far-host, $AGE_RE\\)\$"
	wait_for overdue_pg "$NAME"
	run -0 --separate-stderr ad -e 0 -x 1s "$NAME" touch "$T/ran"
	assert [ -e "$T/ran" ]
	# the old supervisor heard of it from its socket: TERM, ignored, then KILL
	reap "$old"
	assert_equal "$REAP_STATUS" 137
	assert_equal "$(cat "$old_err")" \
		"adaptive: $NAME: the run's session on the server ended; its lock is free: sending SIGTERM"
	run -0 grep -cE "\\] $NAME (expire pid=$old host=far-host age=$AGE_RE|session-ended pid=$old session=[0-9]+|expired pid=$old after=session-end|lock-lost pid=[0-9]+ signal=(TERM|KILL))\$" "$T/log"
	assert_output 5
	run -0 --separate-stderr ad_status "$NAME"
	assert_regex "$output" $'\n  runs +2 \\(1 expired\\)'
	run -0 "$LOCKBOX" mutex "$LOCKBOX_PG_URL?lock=$NAME" check
	assert_output 0
}

@test "adaptive: a role that may not end the holder's session: refused and logged so, nothing ended" {
	[[ $LOCKBOX_PG_URL =~ ^(postgres(ql)?://)([^@/]*@)?(.*)$ ]] || fail "unexpected URL"
	local weak="${BASH_REMATCH[1]}lockbox_weak@${BASH_REMATCH[4]}"
	[[ $(sql "SELECT rolsuper FROM pg_roles WHERE rolname = current_user") == t ]] ||
		skip "the test's role is no superuser: it cannot make a weaker one"
	sql "DO \$\$BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'lockbox_weak')
		THEN CREATE ROLE lockbox_weak LOGIN; END IF; END\$\$"
	spawn "$LOCKBOX" adaptive -d "$LOCKBOX_PG_URL" --log "$T/log" -e 0 -x 1s "$NAME" \
		sh -c "$HUNG_SCRIPT" sh "$T/old"
	local old=$SPAWN_PID
	wait_for holder_ready "$T/old" "$old"
	track_pid "$(cat "$T/old")"
	sql "GRANT SELECT, INSERT, UPDATE ON lockbox_atom TO lockbox_weak"
	wait_for overdue_pg "$NAME"
	run -75 --separate-stderr "$LOCKBOX" adaptive -d "$weak" --log "$T/log" -e 0 -x 1s "$NAME" touch "$T/ran"
	assert_equal "$stderr" \
		"adaptive: $NAME: cannot expire PID $old on $(hostname | cut -c1-16): the server does not let this role end its session"
	assert [ ! -e "$T/ran" ]
	run -0 grep -c "\\] $NAME expire-refused pid=$old reason=permission\$" "$T/log"
	run -1 grep -E "session-ended|lock-lost|expired pid" "$T/log"
	# the run goes on, holding its lock
	kill -0 "$old"
	run -0 "$LOCKBOX" mutex "$LOCKBOX_PG_URL?lock=$NAME" check
	assert_output 1
}

@test "adaptive: the state table is every role's; in a table an older lockbox made, the message says what to grant" {
	need_superuser
	local db=lockbox_t$$_$RANDOM base other owner
	sql "CREATE DATABASE $db"
	printf '%s\n' "$db" >>"$T/.dropdb"
	base=${LOCKBOX_PG_URL%/*}/$db
	other=$(role_url lockbox_other "$db")
	owner=$(sql "SELECT current_user")
	# the first run makes the table; a run by another role uses it
	run -0 "$LOCKBOX" adaptive -d "$base" -e 0 "$NAME" true
	run -0 --separate-stderr "$LOCKBOX" adaptive -d "$other" -e 0 "$NAME" true
	assert_equal "$stderr" ""
	run -0 "$LOCKBOX" adaptive -d "$other" status "$NAME"
	assert_regex "$output" $'\n  runs +2 '
	# a table without the grant: the run says exactly what to grant
	psql "$base" -XAtq -c "REVOKE ALL ON lockbox_atom FROM PUBLIC"
	run -125 --separate-stderr "$LOCKBOX" adaptive -d "$other" -e 0 "$NAME" touch "$T/ran"
	assert_equal "$stderr" "adaptive: $other?lock=$NAME: permission denied for table lockbox_atom; the table's owner, role $owner, may grant it: GRANT SELECT, INSERT, UPDATE ON lockbox_atom TO lockbox_other"
	assert [ ! -e "$T/ran" ]
	psql "$base" -XAtq -c "GRANT SELECT, INSERT, UPDATE ON lockbox_atom TO lockbox_other"
	run -0 "$LOCKBOX" adaptive -d "$other" -e 0 "$NAME" touch "$T/ran"
	assert [ -e "$T/ran" ]
}

@test "adaptive: times are the server's: a client clock days off neither stores its time nor ends the wait" {
	command -v faketime >/dev/null || skip "faketime is not installed"
	# an ASan build refuses to start under faketime's LD_PRELOAD
	FAKETIME_DONT_FAKE_MONOTONIC=1 faketime -f +0 "$LOCKBOX" adaptive -d "$LOCKBOX_PG_URL" status "$NAME" \
		>/dev/null 2>&1 || skip "the binary does not run under faketime"
	run -0 env FAKETIME_DONT_FAKE_MONOTONIC=1 faketime -f -3d "$LOCKBOX" adaptive -d "$LOCKBOX_PG_URL" \
		--log "$T/log" -e 1h "$NAME" true
	local server logged start
	server=$(sql "SELECT extract(epoch FROM now())::bigint")
	# the client's clock was three days behind: its own log line says so
	logged=$(date -d "$(cut -d' ' -f1 "$T/log" | head -n 1)" +%s)
	assert [ $((server - logged)) -gt $((2 * 86400)) ]
	# the start it stored is the server's time (nanoseconds at offset 40)
	start=$(($(stored "$NAME" 40 8) / 1000000000))
	assert [ $((server - start)) -ge 0 ]
	assert [ $((server - start)) -lt 60 ]
	# a client a day ahead: too soon still, by the server's clock
	run -75 --separate-stderr env FAKETIME_DONT_FAKE_MONOTONIC=1 faketime -f +1d "$LOCKBOX" adaptive \
		-d "$LOCKBOX_PG_URL" -e 1h "$NAME" touch "$T/ran"
	assert_regex "$stderr" "too soon; next run allowed in (1h|59m[0-9]+s)\$"
	assert [ ! -e "$T/ran" ]
}

# bats test_tags=privilege
@test "adaptive: a state URL takes no lock=; an unreachable server is 125" {
	run -125 --separate-stderr "$LOCKBOX" adaptive -d "$U" x true
	assert_equal "$stderr" "adaptive: invalid state database '$U': lock= comes from NAME
Try 'lockbox adaptive --help'."
	local port
	port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	run -125 --separate-stderr "$LOCKBOX" adaptive -E 0 -d "postgresql://nobody@127.0.0.1:$port/postgres" x touch "$T/ran"
	assert_regex "$stderr" "cannot connect"
	run -125 --separate-stderr "$LOCKBOX" adaptive -d "postgresql://nobody@127.0.0.1:$port/postgres" status
	assert [ ! -e "$T/ran" ]
}

teardown() {
	local d
	if [[ -e ${T:-}/.down ]]; then
		"$SRC/tools/pg-cluster" up "$LOCKBOX_PG_DIR" 3>&- || true
	fi
	if [[ -s ${T:-}/.dropdb ]]; then
		while read -r d; do
			sql "DROP DATABASE IF EXISTS $d WITH (FORCE)" || true
		done <"$T/.dropdb"
	fi
	if [[ -s ${T:-}/.standby ]]; then
		"$SRC/tools/pg-cluster" stop "$(cat "$T/.standby")" || true
	fi
	kill_tracked
	if [[ -f ${T:-}/.cleanup ]]; then
		while read -r d; do
			rm -rf -- "$d"
		done <"$T/.cleanup"
	fi
}
