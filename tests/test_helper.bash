# SPDX-License-Identifier: ISC
# shellcheck shell=bash
# Shared setup for the lockbox bats suite: the binary under test, a private
# temp dir per test, bounded waits on observable state, background holders
# and their cleanup.

bats_require_minimum_version 1.5.0
# Each case loads the libraries afresh, and their load.bash sources each
# file through a $(dirname ...) of its own: fifteen subshells a case, of a
# shell as large as bats', half of what an empty case costs. What
# a load.bash of that one shape sources is sourced here directly; a loader
# of any other shape is bats' to run.
lockbox_load_library() {	# lockbox_load_library NAME
	local dirs dir lib='' line file files=()
	# shellcheck disable=SC2016 # the loader's own words
	local shape='source "$(dirname "${BASH_SOURCE[0]}")/src/'
	IFS=: read -ra dirs <<<"${BATS_LIB_PATH:-}"
	for dir in "${dirs[@]}"; do
		[[ -f $dir/$1/load.bash ]] && lib=$dir/$1 && break
	done
	[[ -z $lib ]] || while IFS= read -r line; do
		if [[ $line == "$shape"*'.bash"' ]]; then
			file=${line#"$shape"}
			files+=("$lib/src/${file%'"'}")
		elif [[ -n $line && $line != '#'* ]]; then
			files=()
			break
		fi
	done <"$lib/load.bash"
	if ((${#files[@]} == 0)); then
		bats_load_library "$1"
		return
	fi
	for file in "${files[@]}"; do
		# shellcheck disable=SC1090 # the library's own files
		source "$file"
	done
}
lockbox_load_library bats-support
lockbox_load_library bats-assert

# The binary under test: $LOCKBOX (make check exports it), else the build
# tree's, else the one beside this directory (an in-tree build).
if [[ -z ${LOCKBOX_BUILDDIR:-} ]]; then
	LOCKBOX_BUILDDIR=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
fi
: "${LOCKBOX:=$LOCKBOX_BUILDDIR/lockbox}"
if [[ $LOCKBOX == */* && $LOCKBOX != /* ]]; then
	LOCKBOX=$PWD/$LOCKBOX
fi
LOCKHOLD=$LOCKBOX_BUILDDIR/tests/lockhold
export LOCKBOX LOCKBOX_BUILDDIR LOCKHOLD

# Generous, for a loaded machine: a bound that only a real hang exceeds.
WAIT_LIMIT=${LOCKBOX_TEST_WAIT_LIMIT:-30}
# The same for reap, whose process may first have to finish a wait of its
# own (-w 60 at most where a test reaps one that times out; a longer -w
# is there only to outlast the test's own steps, and is ended earlier)
REAP_LIMIT=${LOCKBOX_TEST_REAP_LIMIT:-$((WAIT_LIMIT * 4))}

# pace [US]: how long one short run of the binary takes on this machine
# now, in microseconds: the slowest of three runs of slots on a free pool
# of its own, each running true (a process started from bash, a lock, an
# exec); with US, the larger of that and US. Every timing bound beyond
# the durations a case asks for (a -w, an interval) is a ratio of a pace
# taken in the same case, before and after what it times: a machine
# busy enough to make the case slow makes the pace slow too. A quiet
# machine's pace is a millisecond or two.
pace() {
	local i t0 t max=${1:-1}
	for i in 1 2 3; do
		t0=${EPOCHREALTIME/[.,]/}
		"$LOCKBOX" slots "$T/.pace" 1 true </dev/null >/dev/null 2>&1 3>&- || true
		t=$((${EPOCHREALTIME/[.,]/} - t0))
		((t <= max)) || max=$t
	done
	printf '%s\n' "$max"
}

# paces_or N SECONDS: SECONDS, or N of lockbox's paces where the machine
# is slow enough that these come to more; in whole seconds
paces_or() {
	local s=$(($(pace) * $1 / 1000000))
	((s >= $2)) || s=$2
	printf '%s\n' "$s"
}

# within SECONDS CMD...: CMD, killed (status 124) unless it ends within
# SECONDS, or 100 times as many of lockbox's paces where the machine is
# slow enough that these come to more
within() {
	timeout "$(paces_or $(($1 * 100)) "$1")" "${@:2}"
}

# at_once CMD...: within 4 s (a refusal that names the holder, without
# waiting for anything)
at_once() {
	within 4 "$@"
}

# Why another user's file in a sticky directory others may write is refused
# shellcheck disable=SC2034 # used by the test files
STICKY_REFUSAL="owned by UID 65534 in a shared sticky directory, where its owner may replace it under a holder; refusing it (lock a file of your own, or one lockbox makes; a pool shared with --mode belongs in a directory of its own)"

# A holder's age as list and the busy message print it: 850ms, 42s, 3m12s
# shellcheck disable=SC2034 # used by the test files
AGE_RE='[0-9]+(ms|s|m([0-9]+s)?|h([0-9]+m)?|d([0-9]+h)?)'

# within_paces U0 PACE K: the time since U0 (EPOCHREALTIME's digits, in
# microseconds) is at most K paces, the pace the larger of PACE (taken
# before) and one taken now: a bound that grows with the load.
within_paces() {
	local u=$((${EPOCHREALTIME/[.,]/} - $1)) p
	p=$(pace "$2")
	((u <= $3 * p)) || fail "took ${u} us: more than $3 paces of ${p} us"
}

# DEFAULT_SIGNALS: a prefix that runs a command with every signal at its
# default disposition (coreutils' env --default-signal), where env has
# it. A signal ignored when the suite began (nohup; a script's background
# job ignores INT and QUIT; so does every job that spawn starts) is
# ignored by every command a test starts, and bash can neither catch nor
# reset it: a test that signals a command and waits for its end starts
# that command through this prefix. (Asked once a file: bats sources the
# file before its cases, which inherit what that exports.)
if [[ -z ${LOCKBOX_TEST_ENV_DEFAULT_SIGNAL:-} ]]; then
	LOCKBOX_TEST_ENV_DEFAULT_SIGNAL=no
	env --default-signal true 2>/dev/null && LOCKBOX_TEST_ENV_DEFAULT_SIGNAL=yes
	export LOCKBOX_TEST_ENV_DEFAULT_SIGNAL
fi
DEFAULT_SIGNALS=()
[[ $LOCKBOX_TEST_ENV_DEFAULT_SIGNAL == no ]] || DEFAULT_SIGNALS=(env --default-signal)

# signal_ignored SIG: SIG is ignored in this test's shell, so in what it starts.
signal_ignored() {
	local k v n
	n=$(kill -l "$1") || return 1
	while read -r k v; do
		[[ $k == SigIgn: ]] && (((16#$v >> (n - 1)) & 1)) && return 0
	done <"/proc/$BASHPID/status"
	return 1
}

# need_default_signal SIG...: skip, naming it, when a SIG is ignored here
# and no DEFAULT_SIGNALS can give it back to the commands a test starts.
need_default_signal() {
	local sig
	((${#DEFAULT_SIGNALS[@]} == 0)) || return 0
	for sig; do
		! signal_ignored "$sig" ||
			skip "SIG$sig is ignored on entry (nohup, a background job) and env has no --default-signal"
	done
}

# The common setup; a file with a setup of its own calls lockbox_setup.
setup() {
	lockbox_setup
}

lockbox_setup() {
	# the suite runs with unset variables as errors, as a careful script would
	set -u
	T=$BATS_TEST_TMPDIR
	# shellcheck disable=SC2034 # the lock file the test files use
	F=$T/lock
	PIDFILE=$T/.pids
	: >"$PIDFILE"
	# paths outside $T that teardown removes (also: lines of $T/.cleanup,
	# for helpers that run in a subshell)
	CLEANUP_DIRS=()
	HOLDERS=0
}

teardown() {
	kill_tracked
	# paths made outside $T go too
	local d
	for d in "${CLEANUP_DIRS[@]+"${CLEANUP_DIRS[@]}"}"; do
		rm -rf -- "$d"
	done
	if [[ -f ${T:-}/.cleanup ]]; then
		while read -r d; do
			rm -rf -- "$d"
		done <"$T/.cleanup"
	fi
}

# The start time of a process (field 22 of /proc/PID/stat), or nothing.
proc_starttime() {
	local stat fields
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
	stat=${stat##*) }
	read -ra fields <<<"$stat"
	printf '%s\n' "${fields[19]}"
}

# Remember a PID this test started (a child or a grandchild), together
# with its start time, so teardown never signals a recycled PID.
track_pid() {
	printf '%s %s\n' "$1" "$(proc_starttime "$1")" >>"$PIDFILE"
}

# descendants PID...: the processes the PIDs started that still run (their
# children, theirs, ...), one a line, from /proc
descendants() {
	cat /proc/[0-9]*/stat 2>/dev/null | awk -v roots="$*" '
		{ s = $0; sub(/.*\) /, "", s); split(s, f, " "); kids[f[2]] = kids[f[2]] " " $1 }
		END {
			n = split(roots, q, " ")
			for (i = 1; i <= n; i++) {
				m = split(kids[q[i]], c, " ")
				for (j = 1; j <= m; j++) { print c[j]; q[++n] = c[j] }
			}
		}'
}

kill_tracked() {
	local pid st ours=()
	[[ -f ${PIDFILE:-} ]] || return 0
	while read -r pid st; do
		if [[ -n $st && $(proc_starttime "$pid") == "$st" ]]; then
			ours+=("$pid")
		fi
	done <"$PIDFILE"
	# with what they started, found before any is killed: a tool that runs
	# its command as a child (flock(1), a shell that waits for its job)
	# would leave it behind, holding the lock file open for its 600 s
	if ((${#ours[@]} > 0)); then
		# shellcheck disable=SC2046 # one PID a word
		kill -KILL "${ours[@]}" $(descendants "${ours[@]}") 2>/dev/null || true
	fi
	# reap our own children; wait returns at once for anyone else's
	while read -r pid st; do
		wait "$pid" 2>/dev/null || true
	done <"$PIDFILE"
	: >"$PIDFILE"
}

# wait_for [-t SECONDS] CMD [ARG...]: poll CMD until it succeeds, 10ms
# apart at first and 100ms at most; fail the test if it has not within
# the limit, or at once when CMD returns 2 (it saw that the state it waits
# for can never come). The polls grow apart because many of them (held,
# list) read the kernel's lock table, and each read of it holds up the
# lock calls of every process on the host while it runs (two readers of
# a 10,000-line table beside four busy loops made 300 acquisitions ten
# times slower here): polled every 20ms on a busy machine, they slowed
# the other lanes of a CI run.
wait_for() {
	local limit=$WAIT_LIMIT rc nap=10
	if [[ $1 == -t ]]; then
		limit=$2
		shift 2
	fi
	local deadline=$((SECONDS + limit + 1))
	while :; do
		"$@" && return 0
		rc=$?
		if ((rc == 2)); then
			fail "wait_for: gave up: $*"
			return 1
		fi
		if ((SECONDS >= deadline)); then
			fail "wait_for: still false after ${limit}s: $*"
			return 1
		fi
		sleep "0.$(printf '%03d' "$nap")"
		((nap = nap >= 50 ? 100 : nap * 2))
	done
}

# spawn CMD [ARG...]: run CMD in the background, its output in
# $T/spawn.N.out and .err; the PID in SPAWN_PID (tracked for teardown).
# fd 3 is closed so that bats never waits on it.
SPAWNS=0
spawn() {
	SPAWNS=$((SPAWNS + 1))
	SPAWN_OUT=$T/spawn.$SPAWNS.out
	SPAWN_ERR=$T/spawn.$SPAWNS.err
	"$@" </dev/null >"$SPAWN_OUT" 2>"$SPAWN_ERR" 3>&- &
	SPAWN_PID=$!
	track_pid "$SPAWN_PID"
}

# spawn_watched CMD [ARG...]: spawn CMD under a watcher (perl) that puts
# CMD's PID in WATCHED_PID and, when CMD ends, writes "exit N" or "signal N"
# as the last line of $SPAWN_OUT: whether a shell would see it killed by a
# signal, which its 128+n status cannot tell.
spawn_watched() {
	# shellcheck disable=SC2016 # perl's variables
	spawn perl -e '
		my $p = fork // die "fork: $!";
		if ($p == 0) { exec { $ARGV[1] } @ARGV[1 .. $#ARGV] or exit 127 }
		open(my $f, ">", "$ARGV[0].tmp") or die; print $f "$p\n"; close $f;
		rename("$ARGV[0].tmp", $ARGV[0]) or die;
		waitpid($p, 0);
		print $? & 127 ? "signal " . ($? & 127) : "exit " . ($? >> 8), "\n";
	' "$T/watched.pid" "$@"
	wait_for test -s "$T/watched.pid"
	WATCHED_PID=$(cat "$T/watched.pid")
	track_pid "$WATCHED_PID"
}

# as_nobody CMD...: run CMD as an unprivileged user with no groups. An
# argument that names the binary under test names the copy that user can
# run (see nobody_reach).
as_nobody() {
	local a args=()
	for a; do
		[[ $a == "$LOCKBOX" ]] && a=${NOBODY_LOCKBOX:-$LOCKBOX}
		args+=("$a")
	done
	setpriv --reuid=65534 --regid=65534 --clear-groups "${args[@]}"
}

# NOBODY_LOCKBOX: the binary under test where the unprivileged user can
# run it. A clone in a directory other users cannot enter (root's, under
# /root, is 0700) builds a binary they cannot reach: they get a copy.
nobody_reach() {
	local d
	[[ -n ${NOBODY_LOCKBOX:-} ]] && return 0
	if setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$LOCKBOX"; then
		NOBODY_LOCKBOX=$LOCKBOX
		return 0
	fi
	d=$(world_readable_dir)
	cp -- "$LOCKBOX" "$d/lockbox" && chmod 0755 "$d/lockbox" &&
		NOBODY_LOCKBOX=$d/lockbox
}

# A new directory others can read but not write, removed in teardown
# (the per-test temp dir is private to root).
world_readable_dir() {
	local d
	d=$(mktemp -d "${TMPDIR:-/tmp}/lockbox-ro.XXXXXX")
	chmod 0755 "$d"
	printf '%s\n' "$d" >>"$T/.cleanup"
	printf '%s\n' "$d"
}

need_root_and_nobody() {
	((EUID == 0)) || skip "needs root to switch to an unprivileged user"
	command -v setpriv >/dev/null || skip "needs setpriv"
	nobody_reach
	as_nobody "$LOCKBOX" --version >/dev/null 2>&1 ||
		skip "the unprivileged user cannot run $LOCKBOX"
}

# The command a holder runs once it has its slot: it records LOCKBOX_SLOT
# in MARKER (atomically) and then execs a long sleep, so the holder's PID
# stays the lockbox PID until the test kills it.
# shellcheck disable=SC2016 # expanded by the holder's sh, not here
HOLD_SCRIPT='printf "%s\n" "$LOCKBOX_SLOT" >"$1.tmp" && mv "$1.tmp" "$1" && exec sleep 600'

# start_holder_with APPLET [OPTION...] LOCKFILE [MAX]: hold a slot in the
# background and wait until it is held. Sets HOLDER_PID and HOLDER_SLOT.
start_holder_with() {
	HOLDERS=$((HOLDERS + 1))
	local marker=$T/holder.$HOLDERS
	spawn "$LOCKBOX" "$@" sh -c "$HOLD_SCRIPT" sh "$marker"
	HOLDER_PID=$SPAWN_PID
	wait_for holder_ready "$marker" "$HOLDER_PID" || return 1
	# shellcheck disable=SC2034 # for the test files
	HOLDER_SLOT=$(cat "$marker")
}

# start_holder LOCKFILE MAX: the same with `lockbox slots LOCKFILE MAX`.
start_holder() {
	start_holder_with slots "$@"
}

holder_ready() {
	[[ -s $1 ]] && return 0
	# a holder that exited (refused, failed) will never be ready
	if ! kill -0 "$2" 2>/dev/null; then
		printf 'holder %s exited before taking its slot: %s\n' "$2" "$(cat "$SPAWN_ERR")" >&2
		return 2
	fi
	return 1
}

# gone PID: PID has ended: no such process, or a zombie (its files, and
# so its locks, are closed by then).
gone() {
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
	stat=${stat##*) }
	[[ ${stat%% *} == Z ]]
}

# stop_pid PID: SIGKILL a process this test started and wait until it has
# ended: reaped if it is our child; else (a grandchild, which wait cannot
# reap) until gone, as kill returns before the process has exited.
stop_pid() {
	kill -KILL "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
	wait_for gone "$1"
}

# held LOCKFILE: the number of held slots, as `check` reports it.
held() {
	"$LOCKBOX" slots "$1" check
}

held_is() {
	[[ $(held "$1") == "$2" ]]
}

# lock_id FILE: FILE as /proc/locks names it, MAJOR:MINOR:INODE (the
# device's numbers in hex): an inode number alone may be another file
# system's file too.
lock_id() {
	local d ino
	d=$(stat -c %D "$1") && ino=$(stat -c %i "$1") || return 1
	d=$((16#$d))
	printf '%02x:%02x:%s\n' $(((d >> 8) & 0xfff)) $(((d & 0xff) | ((d >> 12) & 0xfff00))) "$ino"
}

# lock_waiters LOCKFILE: how many processes wait on LOCKFILE: those in
# its queue (each holds a ticket byte at offset 2^32 or above, below the
# waiters' marks at 2^32 + 2^48) and those the kernel has blocked on a
# lock below the queue (the "->" lines of /proc/locks for it).
lock_waiters() {
	local id
	id=$(lock_id "$1") || return 1
	awk -v id="$id" '
		$2 == "->" && $7 == id && $8 < 4294967296 { n++ }
		$2 != "->" && $6 == id && $7 >= 4294967296 && $7 < 281479271677952 { n++ }
		END { print n + 0 }' /proc/locks
}

# ctxt_switches PID...: the context switches of every thread of the PIDs so far
ctxt_switches() {
	local p
	for p in "$@"; do
		cat "/proc/$p/task/"*/status 2>/dev/null
	done | awk '/^(voluntary|nonvoluntary)_ctxt_switches:/ { n += $2 } END { print n + 0 }'
}

# waiting_on LOCKFILE N: at least N processes wait on LOCKFILE.
waiting_on() {
	(($(lock_waiters "$1") >= $2))
}

# True when the binary uses open-file-description locks.
ofd_build() {
	"$LOCKBOX" --version | grep -q 'open-file-description'
}

need_ofd() {
	ofd_build || skip "needs open-file-description locks; this build has classic POSIX locks"
}

# tests/lockhold plays a foreign or stuck lock holder (built by make check).
need_lockhold() {
	[[ -x $LOCKHOLD ]] || skip "tests/lockhold is not built (make tests/lockhold)"
	[[ -r /proc/locks ]] || skip "no /proc/locks"
}

# lockhold [-r] [-n COUNT] FILE START LEN: lock bytes of FILE from another
# process (-r: a read lock; -n: COUNT ranges, one every 256 bytes); sets
# LOCKHOLD_PID once the locks are held. A POSIX build's helper needs -p.
lockhold() {
	local ready=$T/lockhold.$SPAWNS.ready mode=()
	ofd_build || mode=(-p)
	if [[ $1 == -r ]]; then
		mode+=(-r)
		shift
	fi
	if [[ $1 == -n ]]; then
		mode+=(-n "$2")
		shift 2
	fi
	spawn "$LOCKHOLD" "${mode[@]}" "$1" "$2" "$3" "$ready"
	# shellcheck disable=SC2034 # for the test files
	LOCKHOLD_PID=$SPAWN_PID
	wait_for test -e "$ready"
}

# lockhold_ro [-n COUNT] FILE START LEN: as lockhold, a read lock taken by another
# user (nobody) who may only read FILE (a pool made with --mode 0644, in a
# directory that user can enter); sets LOCKHOLD_PID once it is held.
lockhold_ro() {
	local dir mode=()
	ofd_build || mode=(-p)
	if [[ $1 == -n ]]; then
		mode+=(-n "$2")
		shift 2
	fi
	dir=$(world_readable_dir)
	chown 65534 "$dir"
	# setpriv itself (not the as_nobody function, a subshell): it execs lockhold, whose PID this is
	spawn setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$LOCKHOLD" "${mode[@]}" -r "$1" "$2" "$3" "$dir/ready"
	# shellcheck disable=SC2034 # for the test files
	LOCKHOLD_PID=$SPAWN_PID
	wait_for test -e "$dir/ready"
}

# foreign_lockf [-u] sh|ex FILE [LEN [START]]: lock FILE as other programs
# do, with Python's fcntl.lockf (a classic POSIX lock, as lockf(3), perl's
# fcntl and flock --fcntl take): LEN bytes from START, LEN 0 (the default)
# meaning to the end of the file and beyond. A shared lock opens the file
# for reading only: read access is all it needs. -u: as the unprivileged
# user. Sets FOREIGN_PID once the lock is held.
foreign_lockf() {
	local ready=$T/lockf.$SPAWNS.ready as=() py
	py=$(command -v python3) || skip "needs python3"
	if [[ $1 == -u ]]; then
		# a python3 under root's home (pyenv) is not the other user's to run
		as_nobody "$py" -c '' 2>/dev/null || py=/usr/bin/python3
		as_nobody "$py" -c '' 2>/dev/null || skip "the unprivileged user cannot run python3"
		as=(setpriv --reuid=65534 --regid=65534 --clear-groups)
		ready=$(world_readable_dir)/ready
		chmod 0777 "${ready%/*}"
		shift
	fi
	spawn ${as[@]+"${as[@]}"} "$py" -c '
import fcntl, signal, sys
mode, path, length, start, ready = sys.argv[1:6]
f = open(path, "r+" if mode == "ex" else "r")
fcntl.lockf(f, fcntl.LOCK_EX if mode == "ex" else fcntl.LOCK_SH, int(length), int(start))
open(ready, "w").close()
signal.pause()
' "$1" "$2" "${3:-0}" "${4:-0}" "$ready"
	# shellcheck disable=SC2034 # for the test files
	FOREIGN_PID=$SPAWN_PID
	wait_for test -e "$ready"
}

sha() {
	sha256sum "$1" | cut -d' ' -f1
}

# A JSON document on stdin is well-formed (python3 when there is one).
valid_json() {
	if command -v python3 >/dev/null; then
		# strict: the bytes must be UTF-8, whatever the locale
		python3 -c 'import json, sys; json.loads(sys.stdin.buffer.read().decode("utf-8"))'
	else
		grep -Eq '^[[{].*[]}]$'
	fi
}

# A string quoted for use inside an extended regular expression.
re_quote() {
	printf '%s' "$1" | sed 's/[][\.*^$+?(){}|/]/\\&/g'
}

# held_re APPLET FILE PID COMMAND: the whole busy message for a file that
# is not a lockbox lock file, its holder named (PID may be a regex) as a
# look through /proc of a few milliseconds finds it, or not found in time
held_re() {
	printf '^%s: %s: held by (PID %s \\(%s, %s\\)|another program; '"'"'lockbox locks %s'"'"' shows who)$' \
		"$1" "$(re_quote "$2")" "$3" "$(re_quote "$4")" "$AGE_RE" "$(re_quote "$2")"
}

# named_re PID COMMAND: a holder as a busy message names it, its command
# and age: PID 311 (backup.sh, 3m12s)
named_re() {
	printf 'PID %s \\(%s, %s\\)' "$1" "$(re_quote "$2")" "$AGE_RE"
}

# foreign_re PID COMMAND: another program's lock among a refusal's
# holders: its process named, as a look of a few milliseconds through
# /proc finds it, or not found in that time
foreign_re() {
	printf 'PID (%s \\(another program: %s\\)|\\? \\(another program\\))' "$1" "$(re_quote "$2")"
}

# queue_blocked_re KIND FILE PID COMMAND: the words of a wait ended by
# another program's KIND (read, write) lock on FILE's queue, its process
# named (as the kernel, or a look of a few milliseconds, names it) or not
queue_blocked_re() {
	printf 'the wait queue is blocked by a %s lock lockbox did not take( \\(PID %s, %s\\)|; '"'"'lockbox locks %s'"'"' shows who)' \
		"$1" "$3" "$(re_quote "$4")" "$(re_quote "$2")"
}

# locked_re APPLET FILE PID COMMAND: the whole busy message for another
# program's lock, its process named (as the kernel, or a look through
# /proc of a few milliseconds, names it) or not found in that time
locked_re() {
	printf '^%s: %s: locked by another program(: PID %s \\(%s\\)|; '"'"'lockbox locks %s'"'"' shows who)$' \
		"$1" "$(re_quote "$2")" "$3" "$(re_quote "$4")" "$(re_quote "$2")"
}

# ended PID: a child of this shell has ended: a zombie, or reaped
# already (no such process, or the PID is another's now).
ended() {
	local stat fields
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
	stat=${stat##*) }
	read -ra fields <<<"$stat"
	[[ ${fields[0]} == Z || ${fields[1]} != "$BASHPID" ]]
}

# show_process PID: what a process that should have ended is doing: each
# thread's state, kernel wait channel and system call, its children, and
# what the last spawned command wrote to stderr
show_process() {
	local t
	for t in /proc/"$1"/task/*; do
		printf '# thread %s: %s, in %s, syscall %s\n' "${t##*/}" \
			"$(awk '$1 == "State:" { print $2 }' "$t/status" 2>/dev/null)" \
			"$(cat "$t/wchan" 2>/dev/null)" "$(cut -d' ' -f1 "$t/syscall" 2>/dev/null)"
	done
	printf '# children: %s\n' "$(cat /proc/"$1"/task/*/children 2>/dev/null)"
	[[ -s ${SPAWN_ERR:-} ]] && sed 's/^/# stderr: /' "$SPAWN_ERR"
	return 0
}

# reap [-t SECONDS] PID: wait for a background process of ours, up to
# REAP_LIMIT (or SECONDS): one still running then fails the test; its
# status in REAP_STATUS (`run wait` would wait in a subshell, which cannot).
reap() {
	local st=0 limit=$REAP_LIMIT
	if [[ $1 == -t ]]; then
		limit=$2
		shift 2
	fi
	if ! wait_for -t "$limit" ended "$1"; then
		show_process "$1"
		return 1
	fi
	wait "$1" || st=$?
	# shellcheck disable=SC2034 # for the test files
	REAP_STATUS=$st
}

# run --separate-stderr leaves the command's stderr in $stderr.
assert_stderr() {
	# shellcheck disable=SC2154 # set by bats' run
	assert_equal "$stderr" "$1"
}

assert_stderr_regex() {
	assert_regex "$stderr" "$1"
}

# Commands for lockbox to run, expanded by their own sh, not here.
# shellcheck disable=SC2016,SC2034
SHOW_SLOT='echo "$LOCKBOX_SLOT"'
# shellcheck disable=SC2016,SC2034
SAY_SLOT='echo "slot $LOCKBOX_SLOT"'
# shellcheck disable=SC2016,SC2034
SLOT_TO_FILE='echo "$LOCKBOX_SLOT" >"$1"'

# --- forging lock files and adaptive run state (offsets as in lockbox(1)
# and adaptive(1))

# Little-endian bytes as printf escapes: le BYTES VALUE.
le() {
	local n=$1 v=$2 i b out=''
	for ((i = 0; i < n; i++)); do
		printf -v b '\\x%02x' $(((v >> (8 * i)) & 255))
		out+=$b
	done
	printf '%s' "$out"
}

# poke FILE OFFSET ESCAPES: overwrite bytes in place.
poke() {
	# shellcheck disable=SC2059 # the escapes are the format
	printf "$3" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

# reseal FILE: recompute the atom area's checksum (FNV-1a of area bytes
# 16..1919, i.e. file bytes 80..1983), as a forger would.
reseal() {
	local h=2166136261 b
	for b in $(od -An -v -tu1 -j80 -N1904 "$1"); do
		h=$(((h ^ b) * 16777619 & 0xffffffff))
	done
	poke "$1" 76 "$(le 4 "$h")"
}

boot_id_escapes() {
	local hex
	hex=$(tr -d '-' </proc/sys/kernel/random/boot_id)
	printf '%s' "$hex" | sed 's/../\\x&/g'
}

# forge_run FILE PID: slot 1's record and the atom's run state both name
# process PID as the run's supervisor and command, started long ago, with
# a valid checksum: what anyone who can write FILE can make of it.
forge_run() {
	local start
	start=$(proc_starttime "$2")
	poke "$1" 4096 "$(le 4 0x444c4f48)$(le 4 "$2")$(le 8 "$start")$(le 8 1)$(le 8 1)$(le 4 0)$(le 4 1)$(boot_id_escapes)"
	poke "$1" 140 "$(le 4 "$2")$(le 8 "$start")$(le 4 "$2")"
	poke "$1" 84 "$(le 4 "$2")"
	reseal "$1"
}
