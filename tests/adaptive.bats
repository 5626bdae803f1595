#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# shellcheck shell=bats
# adaptive: IfElapsed (too soon), busy, expiry of a hung job (CONT, INT,
# TERM, KILL) that never reaches a stranger, supervision, the log, status,
# corrupt state, and concurrent starts.

load test_helper
# bats file_tags=lockkind

AGE_RE='[0-9]+(\.[0-9]+)?(ms|s|m([0-9]+s)?|h([0-9]+m)?|d([0-9]+h)?)'
STAMP_RE='[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z'

setup() {
	lockbox_setup
	D=$T/state
	LOG=$T/log
	export LOCKBOX_DIR=$D
}

# ad ARG...: the applet with the test's log.
ad() {
	"$LOCKBOX" adaptive --log "$LOG" "$@"
}

# The state file of atom NAME (the only one with that prefix in $D).
state_file() {
	local f
	for f in "$D/$1"-*.lock; do
		printf '%s\n' "$f"
	done
}

# A command for a holder: writes its PID to MARKER (atomically), then
# runs BODY (default: sleeps). Its PIDs are tracked for teardown.
marker_cmd() {
	# shellcheck disable=SC2016 # expanded by the holder's sh
	printf 'echo $$ >"%s.tmp" && mv "%s.tmp" "%s" && %s' "$1" "$1" "$1" "${2:-exec sleep 600}"
}

# start_run NAME [BODY] [OPTION...]: an adaptive run in the background,
# waited for until its command runs. Sets RUN_PID (the supervisor) and
# CMD_PID (the command, in its own process group). Started as a job in
# the background, the supervisor ignores INT and QUIT, and what the suite
# ignored on entry (nohup: HUP): it passes on only what it does not
# ignore. RUN_WITH (say, DEFAULT_SIGNALS) goes before it.
RUN_WITH=()
start_run() {
	local name=$1 body=${2:-} marker
	shift 2 || shift $#
	HOLDERS=$((HOLDERS + 1))
	marker=$T/cmd.$HOLDERS
	spawn ${RUN_WITH[@]+"${RUN_WITH[@]}"} "$LOCKBOX" adaptive --log "$LOG" -e 0 "$@" "$name" \
		sh -c "$(marker_cmd "$marker" "$body")"
	RUN_PID=$SPAWN_PID
	wait_for holder_ready "$marker" "$RUN_PID"
	CMD_PID=$(cat "$marker")
	track_pid "$CMD_PID"
	# and its supervisor has logged the start (it does so after the
	# fork, so the command may run first): a test that stops or
	# expires the run then finds that line in its place
	wait_for grep -qF " $name ran pid=$CMD_PID " "$LOG"
}

# overdue NAME: status reports the run as older than its EXPIREAFTER.
overdue() {
	"$LOCKBOX" adaptive status "$1" | grep -q '^  state  *overdue$'
}

# log_count PATTERN N: the log has N lines matching PATTERN.
log_count() {
	[[ $(grep -c -e "$1" "$LOG") == "$2" ]]
}

# The log's events for NAME, without stamps and PIDs.
events() {
	sed -E "s/^$STAMP_RE adaptive\\[[0-9]+\\] $1 //" "$LOG"
}

@test "runs COMMAND with its own status; the state file is NAME canonified plus a hash" {
	run -3 --separate-stderr "$LOCKBOX" adaptive "edit:/etc/motd" sh -c 'echo out; exit 3'
	assert_output out
	assert_stderr ""
	run -0 ls "$D"
	assert_output --regexp '^edit__etc_motd-[0-9a-f]{8}\.lock$'
	# a distinct NAME that canonifies the same gets its own file
	run -0 "$LOCKBOX" adaptive "edit_/etc/motd" true
	run -0 ls "$D"
	assert_equal "${#lines[@]}" 2
}

# bats test_tags=privilege
@test "the state directory is created, 0755 for root and 0700 for others" {
	export LOCKBOX_DIR=$T/new/sub
	run -0 "$LOCKBOX" adaptive a true
	if (($(id -u) == 0)); then
		assert_equal "$(stat -c %a "$T/new/sub")" 755
	else
		assert_equal "$(stat -c %a "$T/new/sub")" 700
	fi
	run -0 "$LOCKBOX" adaptive -d "$T/other" a true
	assert [ -d "$T/other" ]
}

# bats test_tags=privilege
@test "a state directory that cannot be made or used is named, with what to do: -d or LOCKBOX_DIR" {
	# a path through a file: made by nobody, whatever the user
	: >"$T/file"
	run -125 --separate-stderr env LOCKBOX_DIR="$T/file/sub" "$LOCKBOX" adaptive a touch "$T/ran"
	assert_stderr "adaptive: $T/file/sub/: cannot create the state directory: Not a directory; use another with -d DIR or LOCKBOX_DIR"
	run -125 --separate-stderr "$LOCKBOX" adaptive -d "$T/file" a touch "$T/ran"
	assert_stderr "adaptive: $T/file/: state directory: Not a directory; use another with -d DIR or LOCKBOX_DIR"
	# the default place, under a HOME that is a file
	if (($(id -u) != 0)); then
		run -125 --separate-stderr env -u LOCKBOX_DIR -u XDG_STATE_HOME HOME="$T/file" "$LOCKBOX" adaptive a touch "$T/ran"
		assert_stderr "adaptive: $T/file/.local/state/lockbox: cannot create the state directory: Not a directory; use another with -d DIR or LOCKBOX_DIR"
	fi
	assert [ ! -e "$T/ran" ]
}

@test "too soon: 75 and when the next run is allowed; it runs once IFELAPSED has passed" {
	local t0 t1 m
	t0=${EPOCHREALTIME/./}
	run -0 ad -e 1h job touch "$T/first"
	run -75 --separate-stderr ad -e 1h job touch "$T/second"
	assert_stderr_regex "^adaptive: job: too soon; next run allowed in (1h|59m[0-9]+s)\$"
	assert [ ! -e "$T/second" ]
	# a bare number is minutes: 90 less the time since the first run,
	# shown to the minute (1h29m once a second has passed; on a slow
	# machine more may have)
	run -75 --separate-stderr ad -e 90 job true
	t1=${EPOCHREALTIME/./}
	assert_stderr_regex '^adaptive: job: too soon; next run allowed in 1h[0-9]+m$'
	# shellcheck disable=SC2154 # set by bats' run
	m=${stderr##* 1h}
	m=$((60 + ${m%m}))
	((m <= 90 && m >= 89 - (t1 - t0) / 60000000)) || fail "allowed in ${m}m, $(((t1 - t0) / 1000))ms after the first run"
	# seconds: allowed again after a bounded wait (a second, or on a slow
	# machine enough of lockbox's paces for the next run to come sooner)
	local e
	e=$(paces_or 20 1)
	run -0 ad -e 0 job true
	run -75 --separate-stderr ad -e "${e}s" job true
	assert_stderr_regex "^adaptive: job: too soon; next run allowed in ${AGE_RE}\$"
	wait_for -t $((e + 10)) ad -q -e "${e}s" job touch "$T/second"
	assert [ -e "$T/second" ]
}

@test "-E CODE replaces 75; -q silences the skip message" {
	run -0 ad job true
	run -0 --separate-stderr ad -E 0 job true
	assert_stderr_regex '^adaptive: job: too soon; next run allowed in '
	run -75 --separate-stderr ad -q job true
	assert_stderr ""
	run -0 --separate-stderr ad -q -E 0 job true
	assert_stderr ""
	# -E does not touch the command's own status
	run -9 ad -e 0 -E 0 job sh -c 'exit 9'
}

@test "busy: 75 naming the running supervisor and its age; mutex list shows it" {
	# a completed run first: IFELAPSED counts from a completion
	run -0 ad -e 0 job true
	start_run job
	run -75 --separate-stderr ad -e 0 job touch "$T/ran"
	assert_stderr_regex "^adaptive: job: already running \\(PID $RUN_PID, $AGE_RE\\)\$"
	assert [ ! -e "$T/ran" ]
	run -0 "$LOCKBOX" mutex "$(state_file job)" list
	assert_regex "${lines[1]}" "^1 +$RUN_PID +$AGE_RE +sh -c "
	# too soon is told before busy, as in the paper
	run -75 --separate-stderr ad -e 1h job true
	# a bound, not an exact time: the run started a moment ago
	assert_stderr_regex '^adaptive: job: too soon; next run allowed in (1h|59m[0-9]+s)$'
}

@test "expiry: a holder ignoring INT and TERM dies by KILL, in order, and the new run proceeds" {
	# shellcheck disable=SC2016
	start_run hung 'trap "" INT TERM; while :; do sleep 1; done' -x 1s
	wait_for overdue hung
	run -0 --separate-stderr ad -e 0 -x 1s -g 300ms hung touch "$T/took"
	assert [ -e "$T/took" ]
	wait_for gone "$CMD_PID"
	wait_for gone "$RUN_PID"
	run -0 events hung
	assert_output --regexp "expire pid=$RUN_PID age=$AGE_RE
signal sig=CONT pids=[0-9,]+
signal sig=INT pids=[0-9,]+
signal sig=TERM pids=[0-9,]+
signal sig=KILL pids=[0-9,]+
expired pid=$RUN_PID after=KILL
ran pid=[0-9]+ command=touch $T/took
finished status=0 duration=[0-9]+\\.[0-9]{3}s\$"
	# the supervisor and the command were both signalled
	run -0 grep -c "signal sig=KILL pids=.*\\b$CMD_PID\\b" "$LOG"
	run -0 "$LOCKBOX" adaptive status hung
	assert_line --regexp '^  last status +0$'
	# the expired run is no duration of the job's: the one that completed is
	assert_line --regexp '^  runs +2 \(1 expired\); last 1 completed: median ([0-9a-z]+), longest \1$'
	run -0 "$LOCKBOX" adaptive --json status hung
	# shellcheck disable=SC2016 # python's
	run -0 python3 -c '
import json, sys
a = json.load(sys.stdin)[0]
ran = [r for r in a["history"] if r["status"] == 0]
assert a["longest_duration_seconds"] == ran[0]["duration_seconds"], a
print("ok")' <<<"$output"
	assert_output ok
}

@test "expiry: after KILL the wait for the lock does not depend on GRACE (-g 0)" {
	# shellcheck disable=SC2016
	start_run hung 'trap "" INT TERM; while :; do sleep 1; done' -x 1s
	wait_for overdue hung
	# no wait after CONT, INT, TERM; KILL cannot be ignored, so its wait is not GRACE's
	run -0 --separate-stderr ad -e 0 -x 1s -g 0 hung touch "$T/took"
	assert [ -e "$T/took" ]
	wait_for gone "$CMD_PID"
	run -0 events hung
	assert_line "expired pid=$RUN_PID after=KILL"
}

@test "expiry: a SIGSTOPped holder gets CONT first, and is gone" {
	start_run stopped '' -x 1s
	kill -STOP "$CMD_PID" "$RUN_PID"
	wait_for overdue stopped
	run -0 --separate-stderr ad -e 0 -x 1s -g 2s stopped touch "$T/took"
	assert [ -e "$T/took" ]
	wait_for gone "$CMD_PID"
	run -0 events stopped
	assert_line --index 0 --regexp "^ran pid=$CMD_PID "
	assert_line --index 1 --regexp "^expire pid=$RUN_PID "
	assert_line --index 2 --regexp '^signal sig=CONT '
	assert_line --index 3 --regexp '^signal sig=INT '
	# spawned in the background, both ignore INT: TERM ends them, and the
	# woken supervisor records how, then lets go
	assert_line --index 4 --regexp '^signal sig=TERM '
	assert_line --index 5 --regexp '^finished status=143 '
	assert_line --index 6 "expired pid=$RUN_PID after=TERM"
}

@test "expiry: a child of the command that ignores every catchable signal is killed too" {
	local child
	# (with classic POSIX locks the lock dies with the supervisor, and the
	# expiry stops there)
	need_ofd
	# shellcheck disable=SC2016
	start_run orphan 'sh -c '\''trap "" INT TERM HUP; echo $$ >"$1.tmp"; mv "$1.tmp" "$1"; exec sleep 600'\'' sh '"\"$T/child\""' & wait' -x 1s
	wait_for test -s "$T/child"
	child=$(cat "$T/child")
	track_pid "$child"
	wait_for overdue orphan
	run -0 --separate-stderr ad -e 0 -x 1s -g 300ms orphan touch "$T/took"
	assert [ -e "$T/took" ]
	# no orphan is left holding the lock, or running at all
	wait_for gone "$child"
	run -0 events orphan
	assert_line --regexp "^signal sig=KILL pids=(.*,)?$child(,.*)?\$"
	assert_line --regexp "^expired pid=$RUN_PID after=KILL\$"
}

@test "a forged holder record never gets an unrelated process signalled" {
	need_lockhold
	local victim vstart f
	spawn sleep 600
	victim=$SPAWN_PID
	wait_for test -n "$(proc_starttime "$victim")"
	vstart=$(proc_starttime "$victim")
	run -0 ad x true
	f=$(state_file x)
	# somebody else holds the lock; its record and the run state claim the
	# victim as the run, long ago, with a valid checksum
	lockhold "$f" 4096 1
	forge_run "$f" "$victim"
	run -0 --separate-stderr ad -e 0 -x 1s -g 300ms x touch "$T/took"
	assert [ -e "$T/took" ]
	# the forged state passed its checks (it was read, not reset)
	# shellcheck disable=SC2154 # set by bats' run
	refute_regex "$stderr" unreadable
	# the real holder was signalled, the victim was not
	kill -0 "$victim"
	assert_equal "$(proc_starttime "$victim")" "$vstart"
	run -1 grep -E "pids=(.*,)?$victim(,|\$)" "$LOG"
	run -0 grep -E "signal sig=(CONT|INT) pids=$LOCKHOLD_PID\$" "$LOG"
}

# bats test_tags=privilege
@test "as another user: a record naming a process whose fds cannot be read is not verified, nothing undelivered is logged as sent" {
	need_root_and_nobody
	need_lockhold
	local d victim vstart f ready log mode=()
	d=$(world_readable_dir)
	mkdir "$d/state"
	chown 65534:65534 "$d/state"
	log=$d/state/log
	run -0 as_nobody env LOCKBOX_DIR="$d/state" "$LOCKBOX" adaptive --log "$log" x true
	f=$(echo "$d"/state/x-*.lock)
	# root's process, with the state file open: unreadable fds for nobody
	spawn sh -c 'exec sleep 600' 9<"$f"
	victim=$SPAWN_PID
	wait_for test -n "$(proc_starttime "$victim")"
	vstart=$(proc_starttime "$victim")
	# nobody's foreign holder of the lock, and records that claim the victim
	ready=$d/state/ready
	ofd_build || mode=(-p)
	spawn setpriv --reuid=65534 --regid=65534 --clear-groups "$LOCKHOLD" "${mode[@]}" "$f" 4096 1 "$ready"
	LOCKHOLD_PID=$SPAWN_PID
	wait_for test -e "$ready"
	forge_run "$f" "$victim"
	run -0 --separate-stderr as_nobody env LOCKBOX_DIR="$d/state" "$LOCKBOX" adaptive --log "$log" -e 0 -x 1s -g 300ms x touch "$d/state/took"
	assert [ -e "$d/state/took" ]
	assert_equal "$(proc_starttime "$victim")" "$vstart"
	# the victim was never a member: no signal line names it, sent or refused
	run -1 grep -E "pids=(.*,)?$victim(,|\$)" "$log"
	run -0 grep -E "signal sig=(CONT|INT) pids=$LOCKHOLD_PID\$" "$log"
}

@test "an expiry refused before any signal leaves the run's end its own" {
	# with classic POSIX locks a child never holds its parent's lock: no "self"
	need_ofd
	# started from inside the run, the expirer holds the lock itself: refused
	# shellcheck disable=SC2016 # expanded by the run's sh
	run -3 --separate-stderr ad -e 0 self sh -c '"$1" adaptive --log "$2" -e 0 -x 1ms self true; echo "inner $?"; exit 3' sh "$LOCKBOX" "$LOG"
	assert_output "inner 75"
	assert_stderr "adaptive: self: this process holds the lock itself (started from inside the run?)"
	run -0 grep -c " self expire-refused pid=[0-9]* reason=self\$" "$LOG"
	# the run ended on its own, with its own status, and was not expired
	run -0 "$LOCKBOX" adaptive status self
	assert_line --regexp '^  last status +3$'
	assert_line --regexp '^  runs +1 \(0 expired\)'
}

@test "a forged record with no verifiable holder: refused, nobody signalled" {
	local victim vstart f
	spawn sleep 600
	victim=$SPAWN_PID
	wait_for test -n "$(proc_starttime "$victim")"
	vstart=$(proc_starttime "$victim")
	run -0 ad x true
	f=$(state_file x)
	# the lock is free: the stale record is ignored and the run goes ahead
	poke "$f" 4096 "$(le 4 0x444c4f48)$(le 4 "$victim")$(le 8 "$vstart")$(le 8 1)$(le 8 1)"
	run -0 ad -e 0 -x 1s x touch "$T/took"
	assert [ -e "$T/took" ]
	assert_equal "$(proc_starttime "$victim")" "$vstart"
	run -1 grep -E 'signal|expire' "$LOG"
}

@test "the wall clock moved forward a day: a young holder is not expired" {
	command -v faketime >/dev/null || skip "faketime is not installed"
	# faketime's LD_PRELOAD cannot reach a static binary
	ldd "$LOCKBOX" >/dev/null 2>&1 || skip "a static binary: faketime cannot move its clock"
	# an ASan build refuses to start under faketime's LD_PRELOAD
	faketime -f +0 "$LOCKBOX" --version >/dev/null 2>&1 || skip "the binary does not run under faketime"
	start_run clock '' -x 1h
	run -75 --separate-stderr env FAKETIME_DONT_FAKE_MONOTONIC=1 \
		faketime -f +1d "$LOCKBOX" adaptive --log "$LOG" -e 0 -x 1h clock true
	assert_stderr_regex "^adaptive: clock: already running \\(PID $RUN_PID, ${AGE_RE}\\)\$"
	# the clock it saw was a day ahead: its log line says so
	run -0 grep -c "^$(date -u -d '+1 day' +%F)T.* clock skipped-busy " "$LOG"
	# shellcheck disable=SC2154 # set by bats' run
	refute_regex "$stderr" '[0-9]+d|[0-9]+h'
	kill -0 "$CMD_PID"
	run -1 grep -E 'expire|signal' "$LOG"
	# nor does a day's jump make a run "not too soon"
	stop_pid "$CMD_PID"
	wait_for -t 10 held_is "$(state_file clock)" 0
	run -75 --separate-stderr env FAKETIME_DONT_FAKE_MONOTONIC=1 \
		faketime -f +1d "$LOCKBOX" adaptive -e 1h clock true
	assert_stderr_regex '^adaptive: clock: too soon; next run allowed in (1h|59m[0-9]+s)$'
}

@test "a last run in the future (clock set back, other boot) blocks for IFELAPSED at most" {
	local f future
	run -0 ad fut true
	f=$(state_file fut)
	future=$(($(date +%s) + 365 * 86400))000000000
	# another boot's start and end, a year ahead on the wall clock
	poke "$f" 88 "$(printf '\\x00%.0s' {1..16})$(le 8 "$future")"
	poke "$f" 120 "$(le 8 "$future")"
	reseal "$f"
	run -75 --separate-stderr ad -e 1s fut true
	assert_stderr_regex "^adaptive: fut: too soon; next run allowed in (1s|[0-9]+ms)\$"
	wait_for -t 10 ad -q -e 1s fut touch "$T/ran"
}

@test "50 concurrent starts of one atom: exactly one runs" {
	local i pids=() st ok=0 skipped=0
	for ((i = 0; i < 50; i++)); do
		"$LOCKBOX" adaptive -q -e 1h many sh -c "echo run >>'$T/runs'" 3>&- &
		pids+=($!)
	done
	for i in "${pids[@]}"; do
		reap "$i"
		st=$REAP_STATUS
		case $st in
		0) ok=$((ok + 1)) ;;
		75) skipped=$((skipped + 1)) ;;
		*) fail "unexpected status $st" ;;
		esac
	done
	assert_equal "$ok" 1
	assert_equal "$skipped" 49
	assert_equal "$(wc -l <"$T/runs")" 1
}

@test "corrupt run state: one warning, a fresh start, never a crash" {
	local f
	run -0 ad c true
	f=$(state_file c)
	head -c 4032 /dev/urandom | dd of="$f" bs=1 seek=64 conv=notrunc status=none
	run -0 --separate-stderr ad -e 1h c touch "$T/ran"
	assert_stderr "adaptive: c: $f: run state unreadable (bad magic); starting afresh"
	assert [ -e "$T/ran" ]
	# reset and recorded: the next start is too soon, with no warning
	run -75 --separate-stderr ad -e 1h c true
	assert_stderr_regex '^adaptive: c: too soon; next run allowed in (1h|59m[0-9]+s)$'
	# a flipped byte fails the checksum
	poke "$f" 300 '\x01'
	run -0 --separate-stderr ad -e 0 c true
	assert_stderr "adaptive: c: $f: run state unreadable (checksum mismatch); starting afresh"
	# truncated inside the atom area
	truncate -s 120 "$f"
	run -0 --separate-stderr ad -e 0 c true
	assert_stderr "adaptive: c: $f: run state unreadable (checksum mismatch); starting afresh"
	run -0 "$LOCKBOX" adaptive status c
	# truncated inside the magic: not a lockbox file, refused untouched
	truncate -s 10 "$f"
	run -125 --separate-stderr ad -e 0 c true
	assert_stderr "adaptive: $f: not a lockbox lock file; refusing to touch it (give the lock a path of its own: lockbox creates it)"
	assert_equal "$(stat -c %s "$f")" 10
	# emptied: adopted afresh
	truncate -s 0 "$f"
	run -0 --separate-stderr ad -e 0 c true
	assert_stderr ""
}

@test "status: idle, running and overdue, with history; --json" {
	run -4 ad -e 10m st sh -c 'exit 4'
	run -0 --separate-stderr "$LOCKBOX" adaptive status st
	assert_stderr ""
	assert_line --index 0 st
	assert_line --regexp '^  state +idle$'
	assert_line --regexp '^  pid +-$'
	assert_line --regexp "^  last start +$STAMP_RE\$"
	assert_line --regexp "^  last end +$STAMP_RE\$"
	assert_line --regexp '^  last status +4$'
	assert_line --regexp "^  last duration +$AGE_RE\$"
	assert_line --regexp '^  next run +in (10m|9m[0-9]+s)$'
	assert_line --regexp '^  if elapsed +10m$'
	assert_line --regexp '^  expire after +2h$'
	assert_line --regexp "^  runs +1 \\(0 expired\\); last 1 completed: median $AGE_RE, longest $AGE_RE\$"
	assert_line --regexp "^  file +$(re_quote "$(state_file st)")\$"
	run -0 "$LOCKBOX" adaptive --json status st
	valid_json <<<"$output"
	assert_output --regexp '"name":"st","file":"[^"]+","state":"idle","pid":null,'
	assert_output --partial '"last_status":4,"last_outcome":"exited"'
	assert_output --regexp '"median_duration_seconds":[0-9.]+,"longest_duration_seconds":[0-9.]+'
	assert_output --regexp '"history":\[\{"start":"[^"]+","duration_seconds":[0-9.]+,"status":4\}\]'

	start_run st2 '' -x 1s
	run -0 "$LOCKBOX" adaptive status st2
	assert_line --regexp '^  state +(running|overdue)$'
	assert_line --regexp "^  pid +$RUN_PID\$"
	assert_line --regexp '^  last status +-$'
	wait_for overdue st2
	# every atom in DIR, sorted by file, when no NAME is given
	run -0 "$LOCKBOX" adaptive --json status
	valid_json <<<"$output"
	assert_output --regexp '^\[\{"name":"st",.*\},\{"name":"st2",.*"state":"overdue","pid":'"$RUN_PID"','
	# a NAME never run is idle; status creates nothing
	run -0 "$LOCKBOX" adaptive -d "$T/none" status nothing
	assert_line --regexp '^  last start +never$'
	assert [ ! -e "$T/none" ]
}

@test "the log: one line per transaction, ISO-8601 UTC stamp, adaptive[PID], NAME" {
	run -0 ad -e 1h "a b" true
	run -75 ad -e 1h "a b" true
	start_run busy
	run -75 ad -e 0 busy true
	run -1 grep -cvE "^$STAMP_RE adaptive\\[[0-9]+\\] (a\\\\x20b|busy) (ran|finished|skipped-too-soon|skipped-busy) " "$LOG"
	assert_output 0
	run -0 events 'a\\x20b'
	assert_line --index 0 --regexp '^ran pid=[0-9]+ command=true$'
	assert_line --index 1 --regexp '^finished status=0 duration=[0-9]+\.[0-9]{3}s$'
	# (what is left of the hour: 59m58s on a host slow enough)
	assert_line --index 2 --regexp '^skipped-too-soon next=(1h|59m[0-9]+s)$'
	run -0 grep -E "busy skipped-busy pid=$RUN_PID age=$AGE_RE\$" "$LOG"
}

@test "signals are passed on to the command; status 128+n" {
	local sig n sigs=(TERM HUP USR1 USR2)
	need_default_signal "${sigs[@]}"
	# a signal the supervisor ignores is not passed on, and the command
	# would run on: it starts with the defaults, INT and QUIT too
	RUN_WITH=(${DEFAULT_SIGNALS[@]+"${DEFAULT_SIGNALS[@]}"})
	((${#DEFAULT_SIGNALS[@]} == 0)) || sigs+=(INT QUIT)
	for sig in "${sigs[@]}"; do
		start_run "sig$sig"
		kill "-$sig" "$RUN_PID"
		reap "$RUN_PID"
		n=$(kill -l "$sig")
		assert_equal "$REAP_STATUS" $((128 + n))
		gone "$CMD_PID"
	done
	run -0 grep -E 'sigTERM finished status=143 ' "$LOG"
}

@test "signalled, and the command died of it: adaptive dies of the same signal" {
	local marker=$T/cmd.watched
	spawn_watched "$LOCKBOX" adaptive --log "$LOG" -e 0 watched sh -c "$(marker_cmd "$marker")"
	wait_for test -s "$marker"
	track_pid "$(cat "$marker")"
	kill -TERM "$WATCHED_PID"
	reap "$SPAWN_PID"
	assert_equal "$(tail -n 1 "$SPAWN_OUT")" "signal 15"
	# the run was recorded as ended before
	run -0 grep -E 'watched finished status=143 ' "$LOG"
}

@test "the supervisor SIGKILLed: the lock stays held while the command runs" {
	need_ofd
	start_run kept
	kill -KILL "$RUN_PID"
	reap "$RUN_PID"
	kill -0 "$CMD_PID"
	run -0 "$LOCKBOX" mutex "$(state_file kept)" check
	assert_output 1
	run -75 --separate-stderr ad -e 0 kept true
	assert_stderr_regex "^adaptive: kept: already running \\(PID $RUN_PID, $AGE_RE\\)\$"
	# it is still the job's: expiry finds the command through the lock
	run -0 ad -e 0 -x 1ms -g 300ms kept true
	wait_for gone "$CMD_PID"
}

# bats test_tags=privilege,quick
@test "exit statuses: 126, 127, 128+n, and usage errors 125" {
	run -127 --separate-stderr "$LOCKBOX" adaptive a nosuchcommand-xyz
	assert_stderr "adaptive: cannot run 'nosuchcommand-xyz': No such file or directory"
	printf 'x' >"$T/noexec"
	run -126 --separate-stderr "$LOCKBOX" adaptive -e 0 a "$T/noexec"
	assert_stderr "adaptive: cannot run '$T/noexec': Permission denied"
	run -137 "$LOCKBOX" adaptive -e 0 a sh -c 'kill -KILL $$'
	run -0 "$LOCKBOX" adaptive -e 0 a -- true
	local usage=(
		"missing NAME|"
		"missing COMMAND: 'a' was taken for NAME, which comes first (adaptive NAME COMMAND)|a"
		"missing COMMAND: 'a' was taken for NAME, which comes first (adaptive NAME COMMAND)|a --"
		"invalid duration '1x': expected a number of minutes, or with units (ms s sec m min h hr d) such as 90s, 10min or 1h30m|-e 1x a true"
		"invalid duration 'x': expected a number of minutes, or with units (ms s sec m min h hr d) such as 90s, 10min or 1h30m|-x x a true"
		"invalid exit code '300': expected 0 to 255|-E 300 a true"
		"invalid option '-z'|-z a true"
		"invalid option '--bogus'|--bogus a true"
		"option '-e' needs an argument|-e"
		"--json goes with status|--json a true"
		"--log and --syslog do not go together|--log $T/l --syslog a true"
	)
	local u msg args
	for u in "${usage[@]}"; do
		msg=${u%%|*}
		args=${u#*|}
		# shellcheck disable=SC2086 # split on purpose
		run -125 --separate-stderr "$LOCKBOX" adaptive $args
		assert_stderr "adaptive: $msg"$'\n'"Try 'lockbox adaptive --help'."
	done
	run -125 --separate-stderr "$LOCKBOX" adaptive -g '' a true
	assert_stderr "adaptive: invalid duration '': expected a number of seconds, or with units (ms s sec m min h hr d) such as 90s, 10min or 1h30m"$'\n'"Try 'lockbox adaptive --help'."
	run -125 --separate-stderr "$LOCKBOX" adaptive "" true
	assert_stderr "adaptive: invalid NAME '': expected 1 to 256 bytes"$'\n'"Try 'lockbox adaptive --help'."
	run -0 "$LOCKBOX" adaptive --help
	assert_line --index 0 --regexp '^usage: adaptive '
}

@test "-v narrates; --syslog is accepted" {
	run -0 --separate-stderr "$LOCKBOX" adaptive -v n true
	assert_stderr_regex "^adaptive: n: running true \\(PID [0-9]+\\)
adaptive: n: finished with status 0 after $AGE_RE\$"
	run -0 --separate-stderr "$LOCKBOX" adaptive --syslog -e 0 n true
	assert_stderr ""
}

# bats test_tags=quick
@test "a bare -e or -x is minutes: --help says so, -v says what it was taken for" {
	run -0 "$LOCKBOX" adaptive --help
	assert_output --partial "(bare number: minutes, 50 = 50"
	assert_output --partial "minutes, 90 = 90 minutes; default 2h)"
	run -0 --separate-stderr "$LOCKBOX" adaptive -v -e 0.001 -x 90 m true
	# shellcheck disable=SC2154 # set by bats' run
	assert_equal "${stderr_lines[0]}" "adaptive: -e 0.001 = 0.001 minutes (a bare number here is minutes; 0.001s is seconds)"
	assert_equal "${stderr_lines[1]}" "adaptive: -x 90 = 90 minutes (a bare number here is minutes; 90s is seconds)"
	# -v after them, auto's bound too
	run -75 --separate-stderr "$LOCKBOX" adaptive -e 50 -x auto:3 -v m true
	assert_equal "${stderr_lines[0]}" "adaptive: -e 50 = 50 minutes (a bare number here is minutes; 50s is seconds)"
	assert_equal "${stderr_lines[1]}" "adaptive: -x auto: BOUND 3 = 3 minutes (a bare number here is minutes; 3s is seconds)"
	assert_regex "${stderr_lines[2]}" "^adaptive: m: too soon; next run allowed in "
	# a unit leaves nothing to say
	run -75 --separate-stderr "$LOCKBOX" adaptive -v -e 50min -x 3hr m true
	assert_stderr_regex "^adaptive: m: too soon; next run allowed in [^"$'\n'"]*\$"
}

# --- what counts as a run, and from when (CFEngine's lastcompleted) -------

@test "a command that cannot be run is not a run: 127, logged, and no IFELAPSED wait after it" {
	run -127 --separate-stderr ad -e 1h nx "$T/no-such-command"
	assert_stderr "adaptive: cannot run '$T/no-such-command': No such file or directory"
	run -0 grep -E "^$STAMP_RE adaptive\\[[0-9]+\\] nx not-started status=127 " "$LOG"
	run -126 --separate-stderr ad -e 1h nx "$T"
	run -0 --separate-stderr ad -e 1h nx touch "$T/ran"
	assert [ -e "$T/ran" ]
	run -0 "$LOCKBOX" adaptive status nx
	assert_line --regexp '^  runs +1 '
}

@test "IFELAPSED counts from the last completion, not the last start" {
	# a run of 1.5 IFELAPSED: at its end, more than IFELAPSED has passed
	# since its start but none since it completed (IFELAPSED 1s, or on a
	# slow machine enough of lockbox's paces for the next run to come
	# sooner)
	local e
	e=$(paces_or 20 1)
	run -0 ad -e "${e}s" long sleep "$((e * 3 / 2)).$((e * 3 % 2 * 5))"
	run -75 --separate-stderr ad -e "${e}s" long true
	assert_stderr_regex "^adaptive: long: too soon; next run allowed in ${AGE_RE}\$"
	wait_for -t $((e + 10)) ad -q -e "${e}s" long touch "$T/ran"
}

@test "a run killed by a later start is recorded as expired even when its supervisor records its end" {
	start_run exp
	run -0 ad -e 0 -x 1ms -g 2s exp true
	run -0 "$LOCKBOX" adaptive status exp
	assert_line --regexp '^  runs +2 \(1 expired\)'
}

@test "a run that took over after an expiry is aged from its own start, not its supervisor's" {
	local marker=$T/cmd.b
	# a job that only SIGKILL ends: the take-over waits 3 graces first
	start_run slow 'trap "" INT TERM; exec sleep 600'
	spawn "$LOCKBOX" adaptive --log "$LOG" -e 0 -x 1ms -g 2s slow sh -c "$(marker_cmd "$marker")"
	wait_for -t 30 test -s "$marker"
	track_pid "$(cat "$marker")"
	# its supervisor started 6s ago or more; its run just now: not
	# expired by -x 5s, which leaves a loaded machine 5s to get here
	run -75 --separate-stderr ad -e 0 -x 5s slow true
	assert_stderr_regex '^adaptive: slow: already running '
	kill -0 "$(cat "$marker")"
}

@test "the start that expires a hung run takes over: an expired run is not a completion" {
	# IFELAPSED counts from the last run that ended by itself; the hung
	# run did not, and none did before it
	start_run hung '' -x 1h
	run -0 --separate-stderr ad -e 1h -x 1ms -g 5s hung touch "$T/ran"
	assert [ -e "$T/ran" ]
	run -0 grep -c ' hung expired pid=' "$LOG"
	assert_output 1
	run -0 "$LOCKBOX" adaptive status hung
	assert_line --regexp '^  runs +2 \(1 expired\)'
	# the take-over's own end is a completion
	run -75 --separate-stderr ad -e 1h hung true
	assert_stderr_regex '^adaptive: hung: too soon; next run allowed in (1h|59m[0-9]+s)$'
	# a job only KILL ends: its supervisor dies with it, and the start
	# that takes over records the expiry itself, not as a completion either
	start_run hung2 'trap "" INT TERM; exec sleep 600'
	run -0 --separate-stderr ad -e 1h -x 1ms -g 1s hung2 touch "$T/ran2"
	assert [ -e "$T/ran2" ]
	run -0 grep -c ' hung2 expired pid=[0-9]* after=KILL$' "$LOG"
}

@test "several starts expire one hung run together: the take-over logs the signal that ended it" {
	local a b
	# only KILL ends this job; its supervisor passes INT and TERM on
	start_run stuck 'trap "" INT TERM; exec sleep 600'
	# two starts that wait a long GRACE after CONT...
	spawn "$LOCKBOX" adaptive --log "$LOG" -e 0 -x 1ms -g 1h stuck true
	a=$SPAWN_PID
	spawn "$LOCKBOX" adaptive --log "$LOG" -e 0 -x 1ms -g 1h stuck true
	b=$SPAWN_PID
	wait_for log_count ' stuck signal sig=CONT ' 2
	# ...and one that goes through every signal at once: its KILL ends the
	# run, mostly before it can look for the lock again (it then gives up)
	run --separate-stderr ad -e 0 -x 1ms -g 0 stuck true
	# each start either took over (and ran true) or found the lock taken
	assert [ "$status" = 0 ] || assert [ "$status" = 75 ]
	reap "$a"
	assert [ "$REAP_STATUS" = 0 ] || assert [ "$REAP_STATUS" = 75 ]
	reap "$b"
	assert [ "$REAP_STATUS" = 0 ] || assert [ "$REAP_STATUS" = 75 ]
	wait_for -t 10 held_is "$(state_file stuck)" 0
	# one start took over, whichever: it says KILL, not the step it was at
	run -0 grep -c ' stuck expired pid=' "$LOG"
	assert_output 1
	run -0 grep -c " stuck expired pid=$RUN_PID after=KILL\$" "$LOG"
	run -1 grep -E ' stuck expired .*after=(CONT|INT|TERM)' "$LOG"
}

@test "forged run state with extreme times: clamped, no overflow, it runs" {
	local f min=$((1 << 63)) max=$(((1 << 63) - 1))
	run -0 ad -e 0 ext true
	f=$(state_file ext)
	# this boot's start, on the boot clock, at INT64_MIN; the completion at
	# INT64_MIN on the wall clock: both long ago, never "in the future"
	poke "$f" 112 "$(le 8 "$min")"
	poke "$f" 120 "$(le 8 "$min")"
	# two runs in the history lasting INT64_MAX each (their median)
	poke "$f" 182 "$(le 2 2)"
	poke "$f" 456 "$(le 8 "$max")"
	poke "$f" 480 "$(le 8 "$max")"
	reseal "$f"
	run -0 --separate-stderr "$LOCKBOX" adaptive status ext
	assert_stderr ""
	assert_line '  next run       now'
	run -0 --separate-stderr "$LOCKBOX" adaptive --json status ext
	assert_stderr ""
	run -0 --separate-stderr ad -e 1h ext touch "$T/ran"
	assert_stderr ""
	assert [ -e "$T/ran" ]
	# the completion at INT64_MIN on the wall clock of another boot
	run -0 ad -e 0 ext2 true
	f=$(state_file ext2)
	poke "$f" 88 "$(printf '\\x00%.0s' {1..16})"
	poke "$f" 120 "$(le 8 "$min")"
	reseal "$f"
	run -0 --separate-stderr ad -e 1h ext2 touch "$T/ran2"
	assert_stderr ""
	assert [ -e "$T/ran2" ]
	# an IFELAPSED of INT64_MAX: the wait is told, not rounded past it
	run -0 ad -e 0 ext3 true
	f=$(state_file ext3)
	poke "$f" 160 "$(le 8 "$max")"
	reseal "$f"
	run -0 --separate-stderr "$LOCKBOX" adaptive status ext3
	assert_stderr ""
	assert_line --regexp '^  next run +in [0-9]+d'
}

# bats test_tags=privilege
@test "status refuses what a run refuses: another user's state file in a sticky directory" {
	need_root_and_nobody
	local d f
	d=$(world_readable_dir)
	chmod 1777 "$d"
	# nobody plants a state file, under the name root's atom uses, that
	# holds the atom back for years
	run -0 --separate-stderr as_nobody "$LOCKBOX" adaptive -d "$d" -e 100000h x true
	f=$(echo "$d"/x-*.lock)
	as_nobody chmod 0666 "$f"
	run -125 --separate-stderr "$LOCKBOX" adaptive -d "$d" x touch "$T/ran"
	assert_stderr "adaptive: $f: $STICKY_REFUSAL"
	# status refuses it too, with the same status, and shows nothing of it
	run -125 --separate-stderr "$LOCKBOX" adaptive -d "$d" status x
	assert_stderr "adaptive: $f: owned by uid 65534 in a directory others can write to; refusing it"
	assert_output ""
	run -125 --separate-stderr "$LOCKBOX" adaptive -d "$d" status
	assert_stderr "adaptive: $f: owned by uid 65534 in a directory others can write to; refusing it"
	assert_output ""
	run -125 --separate-stderr "$LOCKBOX" adaptive -d "$d" --json status
	assert_stderr "adaptive: $f: owned by uid 65534 in a directory others can write to; refusing it"
	assert_output "[]"
	# the caller's own atom beside it is shown
	run -0 "$LOCKBOX" adaptive -d "$d" y true
	run -125 --separate-stderr "$LOCKBOX" adaptive -d "$d" status x y
	assert_line --index 0 y
	# a directory a run refuses, status refuses too
	chmod 0777 "$d"
	run -125 --separate-stderr "$LOCKBOX" adaptive -d "$d" status y
	assert_stderr "adaptive: $d/: state directory writable by others (mode 0777, not sticky); refusing it; use another with -d DIR or LOCKBOX_DIR"
	assert_output ""
}

# bats test_tags=quick
@test "options go before status: an option after it is a usage error, -- ends them" {
	run -125 --separate-stderr "$LOCKBOX" adaptive status --json
	assert_stderr "adaptive: '--json' after status: options go before status
Try 'lockbox adaptive --help'."
	assert_output ""
	run -125 --separate-stderr "$LOCKBOX" adaptive status -d "$T" x
	assert_stderr_regex "^adaptive: '-d' after status: options go before status"
	# a NAME that starts with a dash, after --, as for a run
	run -0 ad -- -x true
	run -0 --separate-stderr "$LOCKBOX" adaptive status -- -x
	assert_equal "${lines[0]}" -x
	assert_line --regexp '^  runs +1 '
}

# --- a learned EXPIREAFTER (-x auto) and starvation

S=1000000000

# forge_history NAME DURATION:STATUS...: the atom's ring of runs, oldest first
# (durations in ns, statuses as stored: -2 expired), as a forger would
# write it into the state an earlier run left.
forge_history() {
	local f i=0 e now ring=''
	f=$(state_file "$1")
	now=$(date +%s)
	shift
	# (24 bytes a run, from byte 448: start, duration, status)
	for e in "$@"; do
		ring+=$(le 8 $((now * S)))$(le 8 "${e%%:*}")$(le 4 "${e##*:}")'\x00\x00\x00\x00'
		i=$((i + 1))
	done
	poke "$f" 448 "$ring"
	poke "$f" 182 "$(le 2 "$i")$(le 2 $((i % 64)))"
	reseal "$f"
}

# age_of NAME: its run's age in seconds, as status --json says it; nothing when none runs
age_of() {
	"$LOCKBOX" adaptive --json status "$1" | grep -oE '"age_seconds":[0-9.]+' | cut -d: -f2
}

# older_than NAME SECONDS: status says its run has lasted at least SECONDS.
older_than() {
	local age
	age=$(age_of "$1")
	[[ -n $age ]] && awk -v a="$age" -v s="$2" 'BEGIN { exit !(a >= s) }'
}

@test "-x auto: runs of 1s learn an EXPIREAFTER of about 2s, and a hung run is expired then" {
	local i
	for i in 1 2 3 4; do
		run -0 ad -e 0 -x auto learn sleep 1
	done
	run -0 "$LOCKBOX" adaptive status learn
	assert_line --regexp '^  expire after +2h \(the bound, 2h: 4 of 5 completed runs needed to learn\)$'
	run -0 ad -e 0 -x auto learn sleep 1
	run -0 "$LOCKBOX" adaptive status learn
	assert_line --regexp '^  expire after +2(\.[0-9]+)?s \(learned from 5 runs: p95 1(\.[0-9]+)?s x 2\)$'
	run -0 "$LOCKBOX" adaptive --json status learn
	valid_json <<<"$output"
	assert_output --regexp '"expire_after_seconds":2\.[0-9]+,"expire_after_learned":true,"expire_after_bound_seconds":7200\.000,"expire_after_why":"learned from 5 runs: p95 1(\.[0-9]+)?s x 2","starving":false,"expired_in_a_row":0'
	# a hung run: overdue after about 2s, not 120 minutes
	start_run learn '' -x auto
	wait_for -t 30 overdue learn
	run -0 --separate-stderr ad -e 0 -x auto -g 300ms learn touch "$T/took"
	assert [ -e "$T/took" ]
	run -0 grep -c " learn expired pid=$RUN_PID " "$LOG"
	# the expired run does not shorten it
	run -0 "$LOCKBOX" adaptive status learn
	assert_line --regexp '^  expire after +2(\.[0-9]+)?s \(learned from 6 runs: p95 1(\.[0-9]+)?s x 2\)$'
	# a bound caps it; auto:0 and junk are usage errors
	run -0 ad -e 0 -x auto:1500ms learn true
	run -0 "$LOCKBOX" adaptive status learn
	assert_line --regexp '^  expire after +1s \(learned from 7 runs: p95 1(\.[0-9]+)?s x 2, capped by the bound, 1s\)$'
	run -125 --separate-stderr ad -x auto:0 learn true
	assert_stderr_regex "invalid bound '0'"
	run -125 --separate-stderr ad -x autox learn true
	run -125 --separate-stderr ad -x auto:x learn true
}

@test "-x auto: a job that slowed from 1s to 3s is not expired once a slow run has completed" {
	run -0 ad -e 0 -x auto slow true
	forge_history slow $S:0 $S:0 $S:0 $S:0 $S:0
	run -0 "$LOCKBOX" adaptive status slow
	assert_line --regexp '^  expire after +2s \(learned from 5 runs: p95 1s x 2\)$'
	# the first slow run completes undisturbed; now p95 is 3s
	run -0 ad -e 0 -x auto slow sleep 3
	run -0 "$LOCKBOX" adaptive status slow
	assert_line --regexp '^  expire after +6(\.[0-9]+)?s \(learned from 6 runs: p95 3(\.[0-9]+)?s x 2\)$'
	# the next is past the old 2s: busy, not expired. One taken by
	# expiring the holder fails the test when the holder was younger than
	# the 6s learned; a host slow enough to let 4s pass between the look
	# at its age and the next run's makes it older than that, and the
	# look is made again
	local try age
	for try in 1 2 3; do
		start_run slow '' -x auto
		wait_for -t 30 older_than slow 2.2
		run --separate-stderr ad -e 0 -x auto slow true
		((status == 75)) && break
		age=$(grep -oE " slow expire pid=$RUN_PID age=[^ ]+" "$LOG" | sed 's/.*age=//')
		echo "# try $try: status $status; the holder expired at the age of '$age'" >&3
		[[ $age =~ ^([6-9]|[1-9][0-9])s$ || ($age == *[mhd]* && $age != *ms) ]] ||
			fail "a holder expired at the age of '$age', under the 6s learned"
	done
	assert_equal "$status" 75
	assert_stderr_regex "^adaptive: slow: already running \\(PID $RUN_PID, "
	kill -0 "$CMD_PID"
	run -1 grep " slow expire pid=$RUN_PID " "$LOG"
}

@test "three expiries in a row: status and --json say starving, and the log and stderr say it" {
	local i
	start_run starve
	for i in 1 2; do
		start_run starve '' -x 1ms -g 300ms
	done
	# two in a row: not yet
	run -0 "$LOCKBOX" adaptive status starve
	refute_line --partial starving
	run -1 grep starving "$LOG"
	start_run starve '' -x 1ms -g 300ms
	run -0 grep -c ' starve expired pid=' "$LOG"
	assert_output 3
	run -0 "$LOCKBOX" adaptive status starve
	assert_line '  starving       yes: the last 3 runs were killed before they finished'
	run -0 "$LOCKBOX" adaptive --json status starve
	valid_json <<<"$output"
	assert_output --partial '"expire_after_why":"fixed","starving":true,"expired_in_a_row":3'
	run -0 grep -c ' starve starving: the last 3 runs were killed before they finished; ExpireAfter 1ms, longest run none completed$' "$LOG"
	assert_output 1
	run -0 grep -c '^adaptive: starve: starving: the last 3 runs were killed before they finished; ExpireAfter 1ms, longest run none completed$' "$SPAWN_ERR"
	# each further expiry says it again, -q or not; with auto, that it rises
	run -0 --separate-stderr ad -q -e 0 -x auto:1ms -g 300ms starve true
	assert_stderr 'adaptive: starve: starving: the last 4 runs were killed before they finished; ExpireAfter 1ms, longest run none completed (auto: raised, at most 1ms)'
	# a run that completes ends it
	run -0 "$LOCKBOX" adaptive status starve
	refute_line --partial starving
}

@test "-x auto: a forged history is clamped: never 0, never past the bound; expiries only raise it" {
	local max=$(((1 << 63) - 1)) e=() i
	run -0 ad -e 0 -x auto forged true
	# durations of 0: the floor, 1s
	forge_history forged 0:0 0:0 0:0 0:0 0:0
	run -0 --separate-stderr "$LOCKBOX" adaptive status forged
	assert_line '  expire after   1s (learned from 5 runs: p95 0ms x 2, raised to the floor, 1s)'
	# INT64_MAX: the bound
	for i in $(seq 64); do e+=("$max:0"); done
	forge_history forged "${e[@]}"
	run -0 --separate-stderr "$LOCKBOX" adaptive status forged
	assert_stderr ""
	assert_line --regexp '^  expire after +2h \(learned from 64 runs: p95 [0-9]+d.* x 2, capped by the bound, 2h\)$'
	# negative durations, and expired runs, are no completions to learn from
	forge_history forged -5:0 -5:0 -5:0 $S:-2 $S:-2 $S:0
	run -0 "$LOCKBOX" adaptive status forged
	assert_line '  expire after   2h (the bound, 2h: 1 of 5 completed runs needed to learn)'
	# starving with auto: twice the longest expired run, within the bound
	forge_history forged $S:0 $S:0 $S:0 $S:0 $S:0 $((5 * S)):-2 $((3 * S)):-2 $((4 * S)):-2
	run -0 "$LOCKBOX" adaptive status forged
	assert_line '  expire after   10s (learned from 5 runs: p95 1s x 2; starving, 3 expired in a row: 10s)'
	# a forged bound of 0 in the state: shown as it is, nothing learned under it
	poke "$(state_file forged)" 168 "$(le 8 0)"
	reseal "$(state_file forged)"
	run -0 --separate-stderr "$LOCKBOX" adaptive status forged
	assert_stderr ""
	assert_line '  expire after   0ms'
	# a run decides with its own bound, whatever the state says
	run -0 --separate-stderr ad -e 0 -x auto:1h forged touch "$T/ran"
	assert [ -e "$T/ran" ]
}

@test "CFEngine's ifelapsed_and_expireafter cases, with fixed IfElapsed 1s and ExpireAfter 2s: unchanged" {
	# (1s and 2s, or on a slow machine as many of lockbox's paces as let
	# the next run come within them, in the same ratio)
	local e x xc
	e=$(paces_or 20 1)
	x=$((2 * e))
	# a second run within IfElapsed is skipped; after it, it runs
	run -0 ad -e "${e}s" -x "${x}s" cf touch "$T/1"
	run -75 --separate-stderr ad -e "${e}s" -x "${x}s" cf touch "$T/2"
	assert_stderr_regex "^adaptive: cf: too soon; next run allowed in ${AGE_RE}\$"
	assert [ ! -e "$T/2" ]
	wait_for -t $((e + 10)) ad -q -e "${e}s" -x "${x}s" cf touch "$T/2"
	# a holder younger than ExpireAfter: busy, left alone (checked with
	# ExpireAfter where the holder is not yet a quarter that old, else with
	# four times its age: on a loaded host, starting it and seeing it
	# start took the whole 2s)
	start_run cf2 '' -x "${x}s"
	xc=$(awk -v a="$(age_of cf2)" -v x="$x" 'BEGIN { print 4 * a < x ? x : int(4 * a) + 1 }')
	run -75 --separate-stderr ad -e "${e}s" -x "${xc}s" cf2 true
	assert_stderr_regex "^adaptive: cf2: already running \\(PID $RUN_PID, "
	kill -0 "$CMD_PID"
	# older than ExpireAfter: killed, and this run takes over
	wait_for -t $((x + 30)) overdue cf2
	run -0 --separate-stderr ad -e "${e}s" -x "${x}s" -g 300ms cf2 touch "$T/3"
	assert [ -e "$T/3" ]
	wait_for gone "$CMD_PID"
	run -0 "$LOCKBOX" adaptive --json status cf2
	assert_output --partial '"expire_after_seconds":'"$x"'.000,"expire_after_learned":false,"expire_after_bound_seconds":null,"expire_after_why":"fixed","starving":false,"expired_in_a_row":0'
	run -0 "$LOCKBOX" adaptive status cf2
	assert_line "  expire after   ${x}s"
	assert_line --regexp '^  runs +2 \(1 expired\)'
	# its end is the completion IfElapsed counts from
	run -75 --separate-stderr ad -e 1m -x "${x}s" cf2 true
	assert_stderr_regex '^adaptive: cf2: too soon; next run allowed in (1m|[0-9]+s)$'
}
