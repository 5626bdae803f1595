#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# shellcheck shell=bats
# Every exit status and usage error as one-line rows (toybox's
# timeout.test is the model): what a command line gets back, what it
# says on stderr, and that it makes nothing; waitfor's and mutex's usage
# errors too. tools/check --quick runs
# these with the other cases tagged quick.

load test_helper
# bats file_tags=packaging,quick

# Rows. Each runs one command, stdout and stderr kept apart, and checks:
#   check STATUS STDERR CMD [ARG...]     the status, the whole stderr as given
#   check_re STATUS REGEX CMD [ARG...]   the whole stderr matching REGEX (ERE,
#                                        anchored at both ends)
#   usage MESSAGE [APPLET] ARG...        lockbox APPLET ARG... is a usage error:
#                                        125, "APPLET: MESSAGE" and the Try line
#                                        (no APPLET when ARG starts with -: lockbox's own)
# and in every row: nothing on stdout, and nothing new anywhere under $T (a
# row that takes a lock takes it on a lock file made before it). A CMD of
# lockbox is $LOCKBOX. A row that fails says so with its line and its
# words, and the case goes on to the next row; rows_done, last in a case,
# fails it if any row did.
ROWS=0
ROW_FAILS=0

# (set +T: bats' DEBUG trap, which records a stack trace at every command
# of a function, would cost a row more than its command does; the row
# names its line itself)
check() {
	set +T
	row_run 0 "$@"
	set -T
}

check_re() {
	set +T
	row_run 1 "$@"
	set -T
}

usage() {
	set +T
	if [[ $2 == -* ]]; then
		row_run 0 125 "lockbox: $1"$'\n'"Try 'lockbox --help'." lockbox "${@:2}"
	else
		row_run 0 125 "$2: $1"$'\n'"Try 'lockbox $2 --help'." lockbox "${@:2}"
	fi
	set -T
}

# row_run REGEX STATUS STDERR CMD [ARG...]: one row (REGEX 1: STDERR is one)
row_run() {
	local re=$1 want=$2 werr=$3 st=0 out='' err='' line=${BASH_LINENO[1]} why=()
	shift 3
	local cmd=("$@")
	[[ ${cmd[0]} == lockbox ]] && cmd[0]=$LOCKBOX
	local before
	row_tree
	before=$ROW_TREE
	"${cmd[@]}" >"$BATS_FILE_TMPDIR/row.out" 2>"$BATS_FILE_TMPDIR/row.err" || st=$?
	row_tree
	IFS= read -r -d '' out <"$BATS_FILE_TMPDIR/row.out" || true
	IFS= read -r -d '' err <"$BATS_FILE_TMPDIR/row.err" || true
	# as bats' run gives them: without the last newlines
	while [[ $err == *$'\n' ]]; do err=${err%$'\n'}; done
	((ROWS += 1))
	((st == want)) || why+=("status $st, not $want")
	if ((re)); then
		[[ $err =~ ^($werr)$ ]] || why+=("stderr not matching ${werr@Q}")
	else
		[[ $err == "$werr" ]] || why+=("stderr not ${werr@Q}")
	fi
	[[ -z $out ]] || why+=("stdout ${out@Q}")
	if [[ $before != "$ROW_TREE" ]]; then
		local made gone
		made=$(row_diff "$ROW_TREE" "$before")
		gone=$(row_diff "$before" "$ROW_TREE")
		why+=("made: ${made:-nothing}; removed: ${gone:-nothing}")
	fi
	((${#why[@]} == 0)) && return 0
	((ROW_FAILS += 1))
	printf '# row at line %s failed: %s\n' "$line" "${*@Q}" >&2
	printf '#   %s\n' "${why[@]}" >&2
	[[ -z $err ]] || printf '#   stderr was %s\n' "${err@Q}" >&2
	return 0
}

# row_tree: every path under $T, one a line, in ROW_TREE (no subshell:
# a row costs the fork of its command and no other)
row_tree() {
	local -a paths
	local opts=
	shopt -q globstar || opts+=g
	shopt -q dotglob || opts+=d
	shopt -q nullglob || opts+=n
	shopt -s globstar dotglob nullglob
	paths=("$T"/**)
	[[ $opts == *g* ]] && shopt -u globstar
	[[ $opts == *d* ]] && shopt -u dotglob
	[[ $opts == *n* ]] && shopt -u nullglob
	printf -v ROW_TREE '%s\n' "${paths[@]}"
}

# row_diff A B: the lines of A that B does not have, on one line
row_diff() {
	printf '%s' "$1" | grep -vxF -f <(printf '%s' "$2") | paste -sd' '
}

# rows_done: fail the case if a row failed
rows_done() {
	((ROW_FAILS == 0)) || fail "$ROW_FAILS of $ROWS rows failed (above)"
}

# to_full COMMAND...: COMMAND with its stdout on a full disk.
to_full() {
	"$@" >/dev/full
}

# --- lockbox's own words ------------------------------------------------

# bats test_tags=lockkind,wait
@test "rows: unknown applets, typos and lockbox's own options; the Try line names what was run" {
	local a opt
	for a in frobnicate slots mutex waitfor adaptive; do
		ln -s "$LOCKBOX" "$T/$a"
	done
	check 127 "lockbox: unknown applet: frobnicate" "$T/frobnicate" "$F" 1 true
	check 127 "lockbox: unknown applet: foo" lockbox foo "$F" 1 true
	check_re 125 "usage: lockbox APPLET \\[ARG\\.\\.\\.\\]"$'\n'"       lockbox --help \\| --version \\| --list.*" lockbox
	# a typo of an applet or an option: the nearest one suggested
	check 127 "lockbox: unknown applet: mutx (did you mean mutex?)" lockbox mutx "$F" true
	check 127 "lockbox: unknown applet: slost (did you mean slots?)" lockbox slost "$F" 2 true
	check 127 "lockbox: unknown applet: waitfr (did you mean waitfor?)" lockbox waitfr 1 1 true
	check 127 "lockbox: unknown applet: lokcs (did you mean locks?)" lockbox lokcs
	# nothing near: no guess
	check 127 "lockbox: unknown applet: flock" lockbox flock "$F" true
	check 127 "lockbox: unknown applet: mut" lockbox mut "$F" true
	usage "invalid option '--hlep' (did you mean --help?)" --hlep
	usage "invalid option '--shell-libs' (did you mean --shell-lib?)" --shell-libs
	usage "invalid option '--wiat' (did you mean --wait?)" mutex --wiat 5 "$F" true
	usage "invalid option '--wiat' (did you mean --wait?)" mutex --wiat=5 "$F" true
	usage "invalid option '--jsno' (did you mean --json?)" slots --jsno "$F" list
	usage "invalid option '--recrod-args' (did you mean --record-args?)" slots --recrod-args "$F" 2 true
	usage "invalid option '--retyr-on' (did you mean --retry-on?)" waitfor --retyr-on 75 1 1 true
	usage "invalid option '--sylog' (did you mean --syslog?)" adaptive --sylog a true
	usage "invalid option '--expire-afer' (did you mean --expire-after?)" adaptive --expire-afer 3h a true
	usage "invalid option '--bogus'" mutex --bogus "$F" true
	# lockbox's own options
	for opt in --nosuch -x --vers -; do
		usage "invalid option '$opt'" "$opt" slots "$F" 1 true
	done
	# the Try line names the applet as it was run: by a link, by its path
	for a in slots mutex waitfor adaptive; do
		check 125 "$a: invalid option '--bogus'"$'\n'"Try '$a --help'." "$T/$a" --bogus
		usage "invalid option '--bogus'" "$a" --bogus
	done
	check 125 "mutex: option '-w' needs an argument"$'\n'"Try 'mutex --help'." "$T/mutex" -w
	rows_done
}

# --- the exit status table ----------------------------------------------

# bats test_tags=lockkind,privilege
@test "rows: every exit status: 0, the command's own, 75 busy or -E's code, 125, 126, 127" {
	run -0 "$LOCKBOX" slots "$F" 1 true
	printf 'echo hi\n' >"$T/script"
	chmod 0644 "$T/script"
	check 0 "" lockbox slots "$F" 1 true
	check 3 "" lockbox slots "$F" 1 sh -c 'exit 3'
	check 42 "" lockbox mutex "$F" sh -c 'exit 42'
	check 125 "slots: $T/nodir/lock: no such directory $T/nodir; lockbox creates the lock file, not its directory" lockbox slots "$T/nodir/lock" 1 true
	check 126 "slots: cannot run '$T/script': Permission denied" lockbox slots "$F" 1 "$T/script"
	check 126 "mutex: cannot run '$T': Permission denied" lockbox mutex "$F" "$T"
	check 127 "slots: cannot run 'lockbox-no-such-command': No such file or directory" lockbox slots "$F" 1 lockbox-no-such-command
	check 127 "slots: cannot run '$T/missing': No such file or directory" lockbox slots "$F" 1 "$T/missing"
	# the slot went with the failed exec
	run -0 held "$F"
	assert_output 0
	# busy: the command does not run, whatever the status
	start_holder "$F" 1
	local code busy
	busy="^slots: $(re_quote "$F"): held by $(named_re "$HOLDER_PID" sh)\$"
	check_re 75 "$busy" lockbox slots "$F" 1 touch "$T/ran"
	for code in 0 1 42 255; do
		check_re "$code" "$busy" lockbox slots -E "$code" "$F" 1 touch "$T/ran"
	done
	check 0 "" lockbox slots -q -E 0 "$F" 1 touch "$T/ran"
	check 9 "" lockbox mutex --conflict-exit-code 9 -q "$F" touch "$T/ran"
	# -E changes only the busy status: a free lock still runs the command
	stop_pid "$HOLDER_PID"
	check 3 "" lockbox slots -E 0 "$F" 1 sh -c 'exit 3'
	rows_done
}

# --- bad input: one line (+ the Try line), 125, nothing created ---------

# bats test_tags=lockkind,wait
@test "rows: a bad MAX, -w or -E, or a missing argument, is a usage error, its bytes escaped; good durations are taken" {
	local max dur code cpus
	local maxmsg="expected a whole number from 1 to 10000, or +N, -N or P% of the processors"
	local durmsg="expected a number of seconds, or with units (ms s sec m min h hr d) such as 90s, 10min or 1h30m"
	for max in 0 abc 3abc 2.5 '' 99999999999999999999 10001 ' 2' 0x2 + - % +x -2x '+ 1' 1.5% %50 '50 %' ++1; do
		usage "invalid MAX '$max': $maxmsg" slots "$F" "$max" touch "$T/ran"
	done
	cpus=$(nproc)
	usage "invalid MAX '+10000': $cpus processors make it $((cpus + 10000)), more than 10000" slots "$F" +10000 touch "$T/ran"
	usage "missing LOCKFILE" slots
	usage "missing MAX" slots "$F"
	usage "missing COMMAND" slots "$F" 2
	usage "missing COMMAND" slots "$F" 2 --
	usage "missing COMMAND" slots -w 1 -q "$F" 2
	usage "missing LOCKFILE" mutex
	usage "missing COMMAND" mutex "$F"
	usage "missing COMMAND" mutex "$F" --
	for dur in 1x abc '' -1 1.2.3 s 1h30 1s2 0x10 +1 ' 1' 99999999999999999999 99999999999d 10mins 1mn 5secs 2hrs 1sec30 min; do
		usage "invalid duration '$dur': $durmsg" slots -w "$dur" "$F" 2 touch "$T/ran"
		usage "invalid duration '$dur': $durmsg" mutex --wait "$dur" "$F" touch "$T/ran"
	done
	usage "option '-w' needs an argument" slots -w
	usage "option '--wait' needs an argument" slots --wait
	for code in 256 300 -1 abc '' 1.5 0x1 +1 ' 1' 99999999999999999999; do
		usage "invalid exit code '$code': expected 0 to 255" slots -E "$code" "$F" 2 touch "$T/ran"
	done
	usage "option '-E' needs an argument" slots -E
	# control bytes, newlines, bytes that are no UTF-8 and C1 controls
	# (CSI) are escaped in a message, one line each; characters stay
	usage "invalid duration '1\\x01\\x1b[31m': $durmsg" slots -w $'1\x01\e[31m' "$F" 2 true
	usage "invalid exit code '1\\n2\\\\3\\t\\r': expected 0 to 255" mutex -E $'1\n2\\3\t\r' "$F" true
	usage "invalid MAX '\\xff\\xc2\\x9bé': $maxmsg" slots "$F" $'\xff\xc2\x9b\xc3\xa9' true
	# good durations, on a lock file made first
	run -0 "$LOCKBOX" slots "$F" 2 true
	for dur in 0 5 .5 1.5s 250ms 1m 1h30m 2d 10min 5sec 2hr 1hr30min 1min30sec 1d2hr; do
		check 0 "" lockbox slots -w "$dur" "$F" 2 true
	done
	rows_done
}

# bats test_tags=lockkind,privilege,wait
@test "rows: unknown options, misplaced words, an option after LOCKFILE, a lock file's missing directory" {
	local applet w="after LOCKFILE: options go before LOCKFILE"
	for applet in slots mutex; do
		check 125 "$applet: $T/nodir/lock: no such directory $T/nodir; lockbox creates the lock file, not its directory" lockbox "$applet" "$T/nodir/lock" 1 touch "$T/ran"
	done
	# a lock file's name escaped in the message
	check 125 "mutex: $T/no\\ndir/lock: no such directory $T/no\\ndir; lockbox creates the lock file, not its directory" lockbox mutex "$T/no"$'\n'"dir/lock" true
	usage "invalid option '-z'" slots -z "$F" 2 true
	usage "invalid option '--bogus'" slots --bogus "$F" 2 true
	usage "invalid option '-z'" mutex -z "$F" true
	usage "--json goes with check or list" slots --json "$F" 2 true
	usage "--fd FD with COMMAND is not supported: take a slot on FD with 'slots acquire --fd FD MAX' and run COMMAND after it, or give the file: slots LOCKFILE MAX COMMAND" slots --fd 0 "$F" 2 true
	usage "unexpected argument 'extra'" slots "$F" check extra
	usage "unexpected argument 'extra'" slots "$F" list extra
	usage "acquire needs --fd FD" slots acquire 2
	usage "release needs --fd FD" slots release
	usage "invalid file descriptor 'x'" slots acquire --fd x 2
	usage "invalid file descriptor '-1'" slots acquire --fd -1 2
	usage "unexpected argument '2'" slots release --fd 0 2
	usage "unexpected argument '2'" mutex acquire --fd 0 2
	usage "unexpected argument 'x'" slots acquire --fd 0 2 x
	usage "invalid MAX '0': expected a whole number from 1 to 10000, or +N, -N or P% of the processors" slots acquire --fd 0 0
	# an option after LOCKFILE: options go first, nothing run
	usage "option '--json' $w" slots "$F" 2 --json list
	usage "option '--json' $w" slots "$F" --json check
	usage "option '--json' $w" slots "$F" check --json
	usage "option '--mode=0666' $w" slots "$F" create --mode=0666
	usage "option '--json' $w" mutex "$F" --json list
	usage "option '-w' $w" mutex "$F" -w 1 touch "$T/ran"
	usage "option '-qv' $w" slots "$F" 2 -qv touch "$T/ran"
	# after --, or not one of lockbox's options, it is the command's name
	run -0 "$LOCKBOX" mutex "$F" true
	check 127 "mutex: cannot run '-w': No such file or directory" lockbox mutex "$F" -- -w 1 true
	check 127 "mutex: cannot run '-z': No such file or directory" lockbox mutex "$F" -z
	rows_done
}

# --- waitfor's and mutex's own -----------------------------------------

# bats test_tags=lockkind,privilege,wait
@test "rows: waitfor's usage errors and 126; mutex's acquire, release and -w" {
	local bad
	local tmsg="expected a duration like 3 (minutes), 90s or 1h30m"
	local imsg="expected a duration like 5 (seconds), 500ms or 1m"
	local rmsg="expected statuses 0 to 255, comma-separated"
	usage "missing TIMEOUT" waitfor
	usage "missing TIMEOUT" waitfor -v
	usage "missing INTERVAL" waitfor 1
	usage "missing COMMAND" waitfor 1 1
	usage "missing COMMAND" waitfor 1 1 --
	for bad in 1x '' 1h30 2..5 1s2 ' 1' 1e3 abc; do
		usage "invalid TIMEOUT '$bad': $tmsg" waitfor "$bad" 1 touch "$T/ran"
		usage "invalid INTERVAL '$bad': $imsg" waitfor 1 "$bad" touch "$T/ran"
	done
	usage "invalid TIMEOUT '36601d': longer than 36600d" waitfor 36601d 1 touch "$T/ran"
	usage "invalid INTERVAL '99999999999999999999': longer than 36600d" waitfor 1 99999999999999999999 touch "$T/ran"
	# a sign reads as an option
	usage "invalid option '-1'" waitfor -1 1 touch "$T/ran"
	for bad in '' x 256 1,300 '1,' ,1 1,,2 -1 ' 1' 1.5 0x4b 99999999999999999999999; do
		usage "invalid --retry-on list '$bad': $rmsg" waitfor --retry-on "$bad" 1 1 touch "$T/ran"
		usage "invalid --retry-on list '$bad': $rmsg" waitfor "--retry-on=$bad" 1 1 touch "$T/ran"
	done
	usage "invalid option '-z'" waitfor -z 1 1 touch "$T/ran"
	usage "invalid option '--bogus'" waitfor --bogus 1 1 touch "$T/ran"
	usage "option '--retry-on' needs an argument" waitfor --retry-on
	usage "option '--quiet' takes no argument" waitfor --quiet=1 1 1 touch "$T/ran"
	# a command that is no program: 126 at once, one line
	printf 'not a program\n' >"$T/notes.txt"
	chmod 644 "$T/notes.txt"
	check 126 "waitfor: cannot run '$T/notes.txt': Permission denied" lockbox waitfor 1m 30 "$T/notes.txt"
	# mutex: acquire and release need --fd and take no other argument; -w
	usage "acquire needs --fd FD" mutex acquire
	usage "unexpected argument '1'" mutex acquire --fd 0 1
	usage "invalid file descriptor 'x'" mutex release --fd x
	usage "invalid duration '1x': expected a number of seconds, or with units (ms s sec m min h hr d) such as 90s, 10min or 1h30m" mutex -w 1x "$F" true
	rows_done
}

# --- a full disk --------------------------------------------------------

# bats test_tags=lockkind
@test "rows: stdout on a full disk: every applet's printing path that returns fails 125 with one message" {
	local out
	run -0 "$LOCKBOX" slots "$F" 2 true
	run -0 "$LOCKBOX" adaptive -d "$T" job true
	for out in "--help" "--version" "--list" "slots --help" "mutex -h" \
	    "waitfor --help" "adaptive --help" "slots $F check" "slots --json $F check" \
	    "mutex $F list" "slots --json $F list" "adaptive -d $T status" \
	    "adaptive -d $T --json status job"; do
		# shellcheck disable=SC2086 # the words of $out are the arguments
		check_re 125 "(lockbox|slots|mutex|waitfor|adaptive): write error: No space left on device" to_full "$LOCKBOX" $out
	done
	# a command's own output is the command's: its status passes through
	check_re 1 "echo: write error.*" to_full "$LOCKBOX" slots "$F" 2 echo hi
	rows_done
}

# --- postgresql:// targets, with or without the backend ----------------

# bats test_tags=lockkind
@test "rows: a postgresql:// target no server answers, or misspelt: 125, even with -E 0, nothing made, no secret shown" {
	local url s pg='(cannot connect: .*|this lockbox was built without PostgreSQL support \(configure --with-libpq\))'
	# port 1 on the loopback: refused at once where the backend is built;
	# a build without libpq says so; neither is ever a quiet skip
	check_re 125 "mutex: $(re_quote "postgresql://127.0.0.1:1/db?lock=x"): $pg" lockbox mutex -E 0 "postgresql://127.0.0.1:1/db?lock=x" touch "$T/ran"
	check_re 125 "slots: $(re_quote "postgres://127.0.0.1:1/db?lock=x"): $pg" lockbox slots -q -E 0 "postgres://127.0.0.1:1/db?lock=x" 2 touch "$T/ran"
	# misspelt: not taken for a path (nothing made, here or in the
	# working directory), did you mean postgresql://?
	mkdir "$T/w"
	cd "$T/w"
	for url in 'postgersql://u:secret@db/ops?lock=x' 'postgressql://db/ops?lock=x' \
		'postgresql:/db/ops?lock=x' 'postgresql:db?lock=x' 'Postgres://db/ops?lock=x' 'POSTGRESQL://db/ops?lock=x'; do
		s=${url#*:}
		s=${s%%[!/]*}
		check 125 "mutex: ${url%%:*}:$s...: not a lock file's path nor a server's URL: did you mean postgresql://?" lockbox mutex -E 0 "$url" touch "$T/ran"
		check 125 "slots: ${url%%:*}:$s...: not a lock file's path nor a server's URL: did you mean postgresql://?" lockbox slots "$url" 2 true
		check_re 125 "adaptive: [A-Za-z]+:/*\.\.\.: not a lock file's path nor a server's URL: did you mean postgresql://\\?" lockbox adaptive -d "$url" a true
	done
	# a directory of that name makes it a path, however it looks
	mkdir postgersql:
	run -0 --separate-stderr "$LOCKBOX" mutex postgersql:/lock true
	assert [ -f postgersql:/lock ]
	# no secret of a URL is printed, even when no server answers
	url='postgresql://u:pw1@127.0.0.1:1/db?password=pw2&sslpassword=pw3&%70assword=pw4&lock=x&application_name=a@b'
	local shown='postgresql://u:***@127.0.0.1:1/db?password=***&sslpassword=***&%70assword=***&lock=x&application_name=a@b'
	local any='(cannot connect|cannot run the PostgreSQL helper|this lockbox was built).*'
	check_re 125 "mutex: $(re_quote "$shown"): $pg" lockbox mutex -E 0 "$url" touch "$T/ran"
	check_re 125 "slots: $(re_quote "$shown"): $any" lockbox slots "$url" check
	usage "invalid state database 'postgresql://u:***@127.0.0.1:1/db?password=***&sslpassword=***&%70assword=***&lock=x': lock= comes from NAME" adaptive -d "${url%%&lock=x*}&lock=x" job true
	# the helper that cannot be run is no excuse either
	check_re 125 "mutex: $(re_quote "$shown"): $any" env LOCKBOX_PG_HELPER="$T/missing" "$LOCKBOX" mutex "$url" true
	rows_done
}

# bats test_tags=lockkind
@test "rows: passfile= and service= in a lock's URL: one line, 125; a missing helper names its package" {
	[[ -x ${LOCKBOX_PG_HELPER:-} ]] || skip "no PostgreSQL helper in this build"
	check 125 "mutex: postgresql://127.0.0.1:1/db?lock=x&passfile=$T/pass: passfile= is not taken in a lock's URL: name the file in PGPASSFILE, or use ~/.pgpass" lockbox mutex -E 0 "postgresql://127.0.0.1:1/db?lock=x&passfile=$T/pass" touch "$T/ran"
	check 125 "slots: postgresql://127.0.0.1:1/db?service=ops&lock=x: service= is not taken in a lock's URL: name the service in PGSERVICE" lockbox slots "postgresql://127.0.0.1:1/db?service=ops&lock=x" 2 true
	# percent-encoded, as libpq would decode it
	check_re 125 ".*passfile= is not taken in a lock's URL.*" lockbox mutex "postgresql://127.0.0.1:1/db?lock=x&pass%66ile=/p" true
	check_re 125 "adaptive: .*: passfile= is not taken in a lock's URL.*" lockbox adaptive -d "postgresql://127.0.0.1:1/db?passfile=/p" a true
	check 125 "mutex: postgresql://u:***@127.0.0.1:1/db?lock=x: cannot run the PostgreSQL helper $T/no-helper: No such file or directory (it comes with the package lockbox-postgresql)" env LOCKBOX_PG_HELPER="$T/no-helper" "$LOCKBOX" mutex "postgresql://u:secret@127.0.0.1:1/db?lock=x" true
	rows_done
}

# bats test_tags=lockkind
@test "rows: a build tree's lockbox runs the PostgreSQL helper built beside it, without LOCKBOX_PG_HELPER" {
	[[ $LOCKBOX == "$LOCKBOX_BUILDDIR/lockbox" && -x $LOCKBOX_BUILDDIR/lockbox-pg ]] ||
		skip "needs a build tree's lockbox and lockbox-pg"
	grep -q -- '--disable-source-paths' "$LOCKBOX_BUILDDIR/config.log" &&
		skip "built with --disable-source-paths: the installed helper only"
	# the helper answers: no server at port 1 (not: no helper at the installed path)
	check_re 125 "mutex: $(re_quote "postgresql://127.0.0.1:1/db?lock=x"): cannot connect: .*" env -u LOCKBOX_PG_HELPER "$LOCKBOX" mutex "postgresql://127.0.0.1:1/db?lock=x" touch "$T/ran"
	rows_done
}
