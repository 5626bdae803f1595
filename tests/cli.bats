#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# shellcheck shell=bats
# The multicall binary: dispatch, --help/--version/--list, every exit
# status of the table, and bad input refused with one line and no side
# effect.

load test_helper
# bats file_tags=packaging

# expect_usage MESSAGE APPLET ARG...: status 125, the two usage lines on
# stderr, nothing on stdout, and no lock file created.
expect_usage() {
	local msg=$1 applet=$2
	shift 2
	run -125 --separate-stderr "$LOCKBOX" "$applet" "$@"
	assert_stderr "$applet: $msg"$'\n'"Try 'lockbox $applet --help'."
	assert_equal "$output" ""
	assert [ ! -e "$F" ]
}

# The applets Makefile.am builds: those it links in bindir
# (LINKED_APPLETS, one a line) and the others its APPLETS line names.
makefile_applets() {
	awk '/^LINKED_APPLETS =/ { on = 1; next }
	    on { on = /\\$/; gsub(/[\\ \t]/, ""); if ($0 != "") print; next }
	    /^APPLETS = \$\(LINKED_APPLETS\)/ {
		for (i = 4; i <= NF; i++) print $i }' "$1"
}

# --- dispatch ---------------------------------------------------------

# bats test_tags=lockkind
@test "lockbox slots runs the command holding a slot" {
	run -0 --separate-stderr "$LOCKBOX" slots "$F" 2 sh -c "$SAY_SLOT"
	assert_output "slot 1"
	assert_stderr ""
	assert [ -f "$F" ]
}

# bats test_tags=lockkind
@test "a link named slots is the slots applet, and its messages say slots:" {
	ln -s "$LOCKBOX" "$T/slots"
	run -0 --separate-stderr "$T/slots" "$F" 2 sh -c "$SAY_SLOT"
	assert_output "slot 1"
	run -125 --separate-stderr "$T/slots" "$F" 0 true
	assert_stderr "slots: invalid MAX '0': expected a whole number from 1 to 10000, or +N, -N or P% of the processors"$'\n'"Try 'slots --help'."
	run -125 --separate-stderr "$T/slots"
	assert_stderr "slots: missing LOCKFILE"$'\n'"Try 'slots --help'."
	run -0 --separate-stderr "$T/slots" --help
	assert_line --index 0 --regexp '^usage: slots '
}

# bats test_tags=lockkind
@test "a link named mutex is the mutex applet" {
	ln -s "$LOCKBOX" "$T/mutex"
	run -0 --separate-stderr "$T/mutex" "$F" sh -c "$SAY_SLOT"
	assert_output "slot 1"
	run -125 --separate-stderr "$T/mutex"
	assert_stderr "mutex: missing LOCKFILE"$'\n'"Try 'mutex --help'."
}

@test "a link with an unknown name: unknown applet, 127" {
	ln -s "$LOCKBOX" "$T/frobnicate"
	run -127 --separate-stderr "$T/frobnicate" "$F" 1 true
	assert_stderr "lockbox: unknown applet: frobnicate"
	assert_equal "$output" ""
	assert [ ! -e "$F" ]
}

@test "an unknown applet: exact message, 127" {
	run -127 --separate-stderr "$LOCKBOX" foo "$F" 1 true
	assert_stderr "lockbox: unknown applet: foo"
	assert_equal "$output" ""
	assert [ ! -e "$F" ]
}

# bats test_tags=lockkind
@test "lockbox alone: usage on stderr, 125" {
	run -125 --separate-stderr "$LOCKBOX"
	assert_output ""
	assert_stderr_regex "^usage: lockbox APPLET \\[ARG\\.\\.\\.\\]"$'\n'"       lockbox --help \\| --version \\| --list"
}

@test "--help for lockbox goes to stdout, status 0" {
	local opt
	for opt in --help -h; do
		run -0 --separate-stderr "$LOCKBOX" "$opt"
		assert_stderr ""
		assert_line --index 0 "usage: lockbox APPLET [ARG...]"
		assert_line --regexp '^Applets: '
	done
}

# bats test_tags=lockkind
@test "--help for every applet goes to stdout, status 0, within 80 columns and 24 lines, the commonest form first" {
	local applet opt
	for applet in slots mutex; do
		for opt in --help -h; do
			run -0 --separate-stderr "$LOCKBOX" "$applet" "$opt"
			assert_stderr ""
			assert_line --index 0 --regexp "^usage: $applet .*COMMAND \\[ARG\\.\\.\\.\\]\$"
			assert_output --partial "Exit: 0 or COMMAND's status, 75 busy, 125 lockbox failed"
		done
	done
	assert [ ! -e "$F" ]
	# a terminal's size, for every applet, and lockbox's own
	for applet in "" slots mutex waitfor adaptive locks; do
		# shellcheck disable=SC2086 # no applet: lockbox --help
		run -0 --separate-stderr "$LOCKBOX" $applet --help
		assert [ "${#lines[@]}" -le 24 ]
		run -0 awk 'length > 80' <<<"$output"
		assert_output ""
	done
}

@test "--version names the version and the lock kind" {
	run -0 --separate-stderr "$LOCKBOX" --version
	assert_stderr ""
	assert_output --regexp '^lockbox [0-9]+\.[0-9]+[^ ]* \((open-file-description|classic POSIX) locks\)$'
}

# bats test_tags=lockkind
@test "-V and every applet's --version print the same version line, status 0" {
	local want args
	run -0 --separate-stderr "$LOCKBOX" --version
	want=$output
	for args in "-V" "slots --version" "mutex --version" "waitfor --version" \
	    "adaptive --version" "slots -q --version" "mutex -v --version" \
	    "slots -V" "mutex -V" "waitfor -V" "adaptive -V" "mutex -qV" "waitfor -q -V"; do
		# shellcheck disable=SC2086 # the words of $args are the arguments
		run -0 --separate-stderr "$LOCKBOX" $args
		assert_stderr ""
		assert_output "$want"
	done
	# through the applets' links too
	run -0 --separate-stderr "${LOCKBOX%/*}/slots" --version
	assert_output "$want"
	local a
	for a in slots mutex waitfor adaptive; do
		ln -s "$LOCKBOX" "$T/$a"
		run -0 --separate-stderr "$T/$a" -V
		assert_output "$want"
		# and every applet's --help lists it
		run -0 --separate-stderr "$T/$a" --help
		assert_line --regexp '^  -V, --version +print lockbox.s version and lock kind$'
	done
	assert [ ! -e "$F" ]
}

# bats test_tags=lockkind
@test "a usage error says Try with the name it was run by" {
	local a
	for a in slots mutex waitfor adaptive; do
		ln -s "$LOCKBOX" "$T/$a"
		run -125 --separate-stderr "$T/$a" --bogus
		assert_stderr "$a: invalid option '--bogus'"$'\n'"Try '$a --help'."
		run -125 --separate-stderr "$LOCKBOX" "$a" --bogus
		assert_stderr "$a: invalid option '--bogus'"$'\n'"Try 'lockbox $a --help'."
	done
	# by its path, the link's name
	run -125 --separate-stderr "$T/mutex" -w
	assert_stderr "mutex: option '-w' needs an argument"$'\n'"Try 'mutex --help'."
}

# bats test_tags=lockkind,wait
@test "a typo of an applet or an option gets the nearest one suggested" {
	run -127 --separate-stderr "$LOCKBOX" mutx "$F" true
	assert_stderr "lockbox: unknown applet: mutx (did you mean mutex?)"
	run -127 --separate-stderr "$LOCKBOX" slost "$F" 2 true
	assert_stderr "lockbox: unknown applet: slost (did you mean slots?)"
	run -127 --separate-stderr "$LOCKBOX" waitfr 1 1 true
	assert_stderr "lockbox: unknown applet: waitfr (did you mean waitfor?)"
	run -127 --separate-stderr "$LOCKBOX" lokcs
	assert_stderr "lockbox: unknown applet: lokcs (did you mean locks?)"
	# nothing near: no guess
	run -127 --separate-stderr "$LOCKBOX" flock "$F" true
	assert_stderr "lockbox: unknown applet: flock"
	run -127 --separate-stderr "$LOCKBOX" mut "$F" true
	assert_stderr "lockbox: unknown applet: mut"
	run -125 --separate-stderr "$LOCKBOX" --hlep
	assert_stderr "lockbox: invalid option '--hlep' (did you mean --help?)"$'\n'"Try 'lockbox --help'."
	run -125 --separate-stderr "$LOCKBOX" --shell-libs
	assert_stderr "lockbox: invalid option '--shell-libs' (did you mean --shell-lib?)"$'\n'"Try 'lockbox --help'."
	expect_usage "invalid option '--wiat' (did you mean --wait?)" mutex --wiat 5 "$F" true
	expect_usage "invalid option '--wiat' (did you mean --wait?)" mutex --wiat=5 "$F" true
	expect_usage "invalid option '--jsno' (did you mean --json?)" slots --jsno "$F" list
	expect_usage "invalid option '--recrod-args' (did you mean --record-args?)" slots --recrod-args "$F" 2 true
	expect_usage "invalid option '--retyr-on' (did you mean --retry-on?)" waitfor --retyr-on 75 1 1 true
	expect_usage "invalid option '--sylog' (did you mean --syslog?)" adaptive --sylog a true
	expect_usage "invalid option '--expire-afer' (did you mean --expire-after?)" adaptive --expire-afer 3h a true
	expect_usage "invalid option '--bogus'" mutex --bogus "$F" true
}

# bats test_tags=lockkind
@test "an unknown option of lockbox's own: usage error with the Try line, 125" {
	local opt
	for opt in --nosuch -x --vers -; do
		run -125 --separate-stderr "$LOCKBOX" "$opt" slots "$F" 1 true
		assert_output ""
		assert_stderr "lockbox: invalid option '$opt'"$'\n'"Try 'lockbox --help'."
	done
	assert [ ! -e "$F" ]
}

# bats test_tags=lockkind
@test "--list prints exactly the applets there are, one a line" {
	run -0 --separate-stderr "$LOCKBOX" --list
	assert_stderr ""
	local listed=$output applet names=("${lines[@]}")
	# today's applets are there, sorted, once each
	assert_line mutex
	assert_line slots
	assert_equal "$listed" "$(printf '%s\n' "${names[@]}" | LC_ALL=C sort -u)"
	# --help names the same set
	run -0 "$LOCKBOX" --help
	assert_line "Applets: $(printf '%s\n' "$listed" | paste -sd' ')"
	# each one listed is an applet that runs
	for applet in "${names[@]}"; do
		run -0 --separate-stderr "$LOCKBOX" "$applet" --help
		assert_line --index 0 --regexp "^usage: $applet "
	done
	# and they are the applets the build makes (each but locks linked in bindir)
	if [[ -n ${LOCKBOX_SRCDIR:-} && -f $LOCKBOX_SRCDIR/Makefile.am ]]; then
		run -0 makefile_applets "$LOCKBOX_SRCDIR/Makefile.am"
		assert_equal "$(printf '%s\n' "${lines[@]}" | LC_ALL=C sort)" "$listed"
	fi
}

# --- the exit status table --------------------------------------------

# bats test_tags=lockkind
@test "exit 0: the command succeeded" {
	run -0 --separate-stderr "$LOCKBOX" slots "$F" 1 true
	assert_stderr ""
}

# bats test_tags=lockkind
@test "exit N: the command's own status passes through (it was exec'd)" {
	run -3 --separate-stderr "$LOCKBOX" slots "$F" 1 sh -c 'exit 3'
	assert_stderr ""
	run -42 "$LOCKBOX" mutex "$F" sh -c 'exit 42'
	# the command is exec'd: it runs as the lockbox process itself
	# shellcheck disable=SC2016 # expanded by the two sh, not here
	run -0 --separate-stderr sh -c 'echo $$; exec "$1" mutex "$2" sh -c '\''echo $$'\' sh "$LOCKBOX" "$F"
	assert_equal "${#lines[@]}" 2
	assert_equal "${lines[0]}" "${lines[1]}"
}

# --- closed standard fds ----------------------------------------------

# bats test_tags=lockkind
@test "stderr closed: the busy message goes nowhere, never into the lock file" {
	start_holder "$F" 1
	# (inside sh: bats' run would give the command a stderr of its own)
	# shellcheck disable=SC2016 # expanded by the sh
	run -75 sh -c '"$1" mutex "$2" true 2>&-' sh "$LOCKBOX" "$F"
	run -1 grep -q 'held by PID' "$F"
	stop_pid "$HOLDER_PID"
	run -0 --separate-stderr "$LOCKBOX" mutex "$F" true
	assert_stderr ""
}

# bats test_tags=lockkind
@test "stdout closed: the command's output goes nowhere, never into the lock file" {
	# shellcheck disable=SC2016 # expanded by the sh
	run -0 sh -c '"$1" mutex "$2" sh -c "echo said-on-stdout; echo there >&2" >&-' sh "$LOCKBOX" "$F"
	run -0 --separate-stderr "$LOCKBOX" mutex "$F" true
	assert_stderr ""
	# (a word no record's binary fields spell by chance, as "hi" once did)
	run -1 grep -q said-on-stdout "$F"
}

# bats test_tags=lockkind
@test "stdin closed: the lock file is not the command's stdin" {
	# shellcheck disable=SC2016 # expanded by the sh
	run -0 sh -c '"$1" mutex "$2" sh -c '\''cat; echo "rc=$?"'\'' <&-' sh "$LOCKBOX" "$F"
	assert_output "rc=0"
	run -0 --separate-stderr "$LOCKBOX" mutex "$F" true
}

# bats test_tags=lockkind
@test "adaptive with stdio closed keeps its state file sound" {
	export LOCKBOX_DIR=$T/state
	# shellcheck disable=SC2016 # expanded by the sh
	run -0 sh -c '"$1" adaptive -e 0 job sh -c "echo hi; echo there >&2" >&- 2>&-' sh "$LOCKBOX"
	run -0 --separate-stderr "$LOCKBOX" adaptive -e 0 job true
	assert_stderr ""
	run -1 grep -q -e hi -e there "$T"/state/job-*.lock
}

# bats test_tags=lockkind
@test "exit 75: busy" {
	start_holder "$F" 1
	run -75 --separate-stderr "$LOCKBOX" slots "$F" 1 touch "$T/ran"
	assert_stderr_regex "^slots: $(re_quote "$F"): held by $(named_re "$HOLDER_PID" sh)\$"
	assert [ ! -e "$T/ran" ]
}

# bats test_tags=lockkind
@test "-E CODE picks the busy status, -E 0 included" {
	start_holder "$F" 1
	local code
	for code in 0 1 42 255; do
		run -"$code" --separate-stderr "$LOCKBOX" slots -E "$code" "$F" 1 touch "$T/ran"
		assert_stderr_regex "^slots: $(re_quote "$F"): held by $(named_re "$HOLDER_PID" sh)\$"
		# busy means the command did not run, whatever the status
		assert [ ! -e "$T/ran" ]
	done
	run -0 --separate-stderr "$LOCKBOX" slots -q -E 0 "$F" 1 touch "$T/ran"
	assert_stderr ""
	run -9 --separate-stderr "$LOCKBOX" mutex --conflict-exit-code 9 -q "$F" touch "$T/ran"
	assert_stderr ""
	assert [ ! -e "$T/ran" ]
	# -E changes only the busy status: a free lock still runs the command
	stop_pid "$HOLDER_PID"
	run -3 "$LOCKBOX" slots -E 0 "$F" 1 sh -c 'exit 3'
}

# bats test_tags=lockkind
@test "exit 125: lockbox itself failed" {
	run -125 --separate-stderr "$LOCKBOX" slots "$T/nodir/lock" 1 true
	assert_stderr "slots: $T/nodir/lock: no such directory $T/nodir; lockbox creates the lock file, not its directory"
	assert [ ! -e "$T/nodir" ]
}

# bats test_tags=lockkind,privilege
@test "exit 126: the command is not executable" {
	printf 'echo hi\n' >"$T/script"
	chmod 0644 "$T/script"
	run -126 --separate-stderr "$LOCKBOX" slots "$F" 1 "$T/script"
	assert_stderr "slots: cannot run '$T/script': Permission denied"
	assert_equal "$output" ""
	run -126 --separate-stderr "$LOCKBOX" mutex "$F" "$T"
	assert_stderr "mutex: cannot run '$T': Permission denied"
	# the slot went with the failed exec
	run -0 held "$F"
	assert_output 0
}

# bats test_tags=lockkind
@test "exit 127: the command is not found" {
	run -127 --separate-stderr "$LOCKBOX" slots "$F" 1 lockbox-no-such-command
	assert_stderr "slots: cannot run 'lockbox-no-such-command': No such file or directory"
	run -127 --separate-stderr "$LOCKBOX" slots "$F" 1 "$T/missing"
	assert_stderr "slots: cannot run '$T/missing': No such file or directory"
	run -0 held "$F"
	assert_output 0
}

# bats test_tags=lockkind,wait
@test "options stop at the first positional: the command's options are its own" {
	run -0 --separate-stderr "$LOCKBOX" slots "$F" 1 sh -c 'echo "$@"' sh -q -w 1 -E 3 --json
	assert_output "-q -w 1 -E 3 --json"
	run -0 --separate-stderr "$LOCKBOX" slots "$F" 1 -- sh -c 'echo ran'
	assert_output "ran"
	run -0 --separate-stderr "$LOCKBOX" mutex "$F" -- sh -c 'echo ran'
	assert_output "ran"
}

# --- bad input: one line (+ the Try line), 125, nothing created -------

# bats test_tags=lockkind
@test "bad MAX is a usage error and creates nothing" {
	local max
	for max in 0 abc 3abc 2.5 '' 99999999999999999999 10001 ' 2' 0x2 + - % +x -2x '+ 1' 1.5% %50 '50 %' ++1; do
		expect_usage "invalid MAX '$max': expected a whole number from 1 to 10000, or +N, -N or P% of the processors" \
			slots "$F" "$max" touch "$T/ran"
	done
	local cpus
	cpus=$(nproc)
	expect_usage "invalid MAX '+10000': $cpus processors make it $((cpus + 10000)), more than 10000" \
		slots "$F" +10000 touch "$T/ran"
	assert [ ! -e "$T/ran" ]
}

# bats test_tags=lockkind
@test "MAX as sem counts jobs: +N, -N and P% of the processors nproc counts" {
	local cpus max want
	cpus=$(nproc)
	for max in +0 +2 -1 -1000 50% 100% 250% 1%; do
		case $max in
		+*) want=$((cpus + ${max#+})) ;;
		-*) want=$((cpus - ${max#-})) ;;
		*%) want=$((cpus * ${max%\%} / 100)) ;;
		esac
		((want >= 1)) || want=1
		run -0 --separate-stderr "$LOCKBOX" slots -v "$F" "$max" true
		assert_stderr "slots: $F: took slot 1 of $want"
	done
	# as many at once as it says: a pool of +0 is full with nproc holders
	if ((cpus <= 16)); then
		local i
		for ((i = 0; i < cpus; i++)); do
			start_holder "$F" "$cpus"
		done
		run -75 --separate-stderr "$LOCKBOX" slots "$F" +0 true
		assert_stderr_regex "^slots: $(re_quote "$F"): all $cpus slots busy: "
	fi
}

# bats test_tags=lockkind
@test "bad input leaves an existing lock file unchanged" {
	run -0 "$LOCKBOX" slots "$F" 3 true
	local before bad nl=$'\n'
	local -a args
	before=$(sha "$F")
	local -a cases=(
		"slots|$F|3abc|touch|$T/ran"
		"slots|$F|0|touch|$T/ran"
		"slots|$F|3"
		"slots|-w|1x|$F|3|touch|$T/ran"
		"slots|-E|300|$F|3|touch|$T/ran"
		"slots|--json|$F|3|touch|$T/ran"
		"slots|$F|check|extra"
		"mutex|-w|-1|$F|touch|$T/ran"
		"mutex|$F"
	)
	for bad in "${cases[@]}"; do
		IFS='|' read -ra args <<<"$bad"
		run -125 --separate-stderr "$LOCKBOX" "${args[@]}"
		# one line, then the Try line
		assert_stderr_regex "^${args[0]}: [^$nl]+$nl$(re_quote "Try 'lockbox ${args[0]} --help'.")\$"
		assert_equal "$(sha "$F")" "$before"
	done
	assert [ ! -e "$T/ran" ]
}

# bats test_tags=lockkind
@test "the largest MAX is accepted" {
	run -0 --separate-stderr "$LOCKBOX" slots "$F" 10000 sh -c "$SHOW_SLOT"
	assert_output 1
}

# bats test_tags=lockkind,wait
@test "missing arguments are usage errors" {
	expect_usage "missing LOCKFILE" slots
	expect_usage "missing MAX" slots "$F"
	expect_usage "missing COMMAND" slots "$F" 2
	expect_usage "missing COMMAND" slots "$F" 2 --
	expect_usage "missing COMMAND" slots -w 1 -q "$F" 2
	expect_usage "missing LOCKFILE" mutex
	expect_usage "missing COMMAND" mutex "$F"
	expect_usage "missing COMMAND" mutex "$F" --
}

# bats test_tags=lockkind
@test "a lock path in a missing directory: one line, 125, nothing created" {
	local applet
	for applet in slots mutex; do
		run -125 --separate-stderr "$LOCKBOX" "$applet" "$T/nodir/lock" 1 touch "$T/ran"
		assert_stderr "$applet: $T/nodir/lock: no such directory $T/nodir; lockbox creates the lock file, not its directory"
	done
	assert [ ! -e "$T/nodir" ]
	assert [ ! -e "$T/ran" ]
}

# bats test_tags=lockkind,privilege,wait
@test "an option after LOCKFILE: a usage error that says options go first, nothing run" {
	local w="after LOCKFILE: options go before LOCKFILE"
	expect_usage "option '--json' $w" slots "$F" 2 --json list
	expect_usage "option '--json' $w" slots "$F" --json check
	expect_usage "option '--json' $w" slots "$F" check --json
	expect_usage "option '--mode=0666' $w" slots "$F" create --mode=0666
	expect_usage "option '--json' $w" mutex "$F" --json list
	expect_usage "option '-w' $w" mutex "$F" -w 1 touch "$T/ran"
	expect_usage "option '-qv' $w" slots "$F" 2 -qv touch "$T/ran"
	assert [ ! -e "$T/ran" ]
	# after --, or not one of lockbox's options, it is the command's name
	run -127 --separate-stderr "$LOCKBOX" mutex "$F" -- -w 1 true
	assert_stderr "mutex: cannot run '-w': No such file or directory"
	run -127 --separate-stderr "$LOCKBOX" mutex "$F" -z
	assert_stderr "mutex: cannot run '-z': No such file or directory"
}

# bats test_tags=lockkind,wait
@test "bad -w durations are usage errors" {
	local dur
	for dur in 1x abc '' -1 1.2.3 s 1h30 1s2 0x10 +1 ' 1' 99999999999999999999 99999999999d 10mins 1mn 5secs 2hrs 1sec30 min; do
		expect_usage "invalid duration '$dur': expected a number of seconds, or with units (ms s sec m min h hr d) such as 90s, 10min or 1h30m" slots -w "$dur" "$F" 2 touch "$T/ran"
		expect_usage "invalid duration '$dur': expected a number of seconds, or with units (ms s sec m min h hr d) such as 90s, 10min or 1h30m" mutex --wait "$dur" "$F" touch "$T/ran"
	done
	expect_usage "option '-w' needs an argument" slots -w
	expect_usage "option '--wait' needs an argument" slots --wait
	assert [ ! -e "$T/ran" ]
}

# bats test_tags=lockkind,wait
@test "good -w durations are accepted" {
	local dur
	for dur in 0 5 .5 1.5s 250ms 1m 1h30m 2d 10min 5sec 2hr 1hr30min 1min30sec 1d2hr; do
		run -0 --separate-stderr "$LOCKBOX" slots -w "$dur" "$F" 2 true
		assert_stderr ""
	done
}

# bats test_tags=lockkind
@test "bad -E codes are usage errors" {
	local code
	for code in 256 300 -1 abc '' 1.5 0x1 +1 ' 1' 99999999999999999999; do
		expect_usage "invalid exit code '$code': expected 0 to 255" slots -E "$code" "$F" 2 touch "$T/ran"
	done
	expect_usage "option '-E' needs an argument" slots -E
	assert [ ! -e "$T/ran" ]
}

# bats test_tags=lockkind
@test "unknown options and misplaced words are usage errors" {
	expect_usage "invalid option '-z'" slots -z "$F" 2 true
	expect_usage "invalid option '--bogus'" slots --bogus "$F" 2 true
	expect_usage "invalid option '-z'" mutex -z "$F" true
	expect_usage "--json goes with check or list" slots --json "$F" 2 true
	expect_usage "--fd FD with COMMAND is not supported: take a slot on FD with 'slots acquire --fd FD MAX' and run COMMAND after it, or give the file: slots LOCKFILE MAX COMMAND" slots --fd 0 "$F" 2 true
	expect_usage "unexpected argument 'extra'" slots "$F" check extra
	expect_usage "unexpected argument 'extra'" slots "$F" list extra
	expect_usage "acquire needs --fd FD" slots acquire 2
	expect_usage "release needs --fd FD" slots release
	expect_usage "invalid file descriptor 'x'" slots acquire --fd x 2
	expect_usage "invalid file descriptor '-1'" slots acquire --fd -1 2
	expect_usage "unexpected argument '2'" slots release --fd 0 2
	expect_usage "unexpected argument '2'" mutex acquire --fd 0 2
	expect_usage "unexpected argument 'x'" slots acquire --fd 0 2 x
	expect_usage "invalid MAX '0': expected a whole number from 1 to 10000, or +N, -N or P% of the processors" slots acquire --fd 0 0
}

# --- postgresql:// targets, with or without the backend ------------------

# bats test_tags=lockkind
@test "a postgresql:// target no server answers: 125, even with -E 0" {
	# port 1 on the loopback: refused at once where the backend is built;
	# a build without libpq says so; neither is ever a quiet skip
	run -125 --separate-stderr "$LOCKBOX" mutex -E 0 "postgresql://127.0.0.1:1/db?lock=x" touch "$T/ran"
	assert_stderr_regex '^mutex: postgresql://127\.0\.0\.1:1/db\?lock=x: (cannot connect: .*|this lockbox was built without PostgreSQL support \(configure --with-libpq\))$'
	run -125 --separate-stderr "$LOCKBOX" slots -q -E 0 "postgres://127.0.0.1:1/db?lock=x" 2 touch "$T/ran"
	assert [ ! -e "$T/ran" ]
}

# bats test_tags=lockkind
@test "a misspelt postgresql:// is not taken for a path: did you mean postgresql://?, 125, nothing made, no secret shown" {
	cd "$T"
	mkdir w
	cd w
	local url
	for url in 'postgersql://u:secret@db/ops?lock=x' 'postgressql://db/ops?lock=x' \
		'postgresql:/db/ops?lock=x' 'postgresql:db?lock=x' 'Postgres://db/ops?lock=x' 'POSTGRESQL://db/ops?lock=x'; do
		run -125 --separate-stderr "$LOCKBOX" mutex -E 0 "$url" touch "$T/ran"
		assert_stderr "mutex: ${url%%:*}:$(sed -n 's/^[^:]*:\(\/*\).*/\1/p' <<<"$url")...: not a lock file's path nor a server's URL: did you mean postgresql://?"
		run -125 --separate-stderr "$LOCKBOX" slots "$url" 2 true
		run -125 --separate-stderr "$LOCKBOX" adaptive -d "$url" a true
		assert_stderr_regex "^adaptive: [A-Za-z]+:/*\.\.\.: not a lock file's path nor a server's URL: did you mean postgresql://\?\$"
	done
	run -0 ls -A
	assert_output ""
	assert [ ! -e "$T/ran" ]
	# a directory of that name makes it a path, however it looks
	mkdir postgersql:
	run -0 --separate-stderr "$LOCKBOX" mutex postgersql:/lock true
	assert [ -f postgersql:/lock ]
}

# bats test_tags=lockkind
@test "passfile= and service= in a lock's URL: one line, 125; a missing helper names its package" {
	[[ -x ${LOCKBOX_PG_HELPER:-} ]] || skip "no PostgreSQL helper in this build"
	run -125 --separate-stderr "$LOCKBOX" mutex -E 0 "postgresql://127.0.0.1:1/db?lock=x&passfile=$T/pass" touch "$T/ran"
	assert_stderr "mutex: postgresql://127.0.0.1:1/db?lock=x&passfile=$T/pass: passfile= is not taken in a lock's URL: name the file in PGPASSFILE, or use ~/.pgpass"
	run -125 --separate-stderr "$LOCKBOX" slots "postgresql://127.0.0.1:1/db?service=ops&lock=x" 2 true
	assert_stderr "slots: postgresql://127.0.0.1:1/db?service=ops&lock=x: service= is not taken in a lock's URL: name the service in PGSERVICE"
	# percent-encoded, as libpq would decode it
	run -125 --separate-stderr "$LOCKBOX" mutex "postgresql://127.0.0.1:1/db?lock=x&pass%66ile=/p" true
	assert_stderr_regex "passfile= is not taken in a lock's URL"
	run -125 --separate-stderr "$LOCKBOX" adaptive -d "postgresql://127.0.0.1:1/db?passfile=/p" a true
	assert_stderr_regex "^adaptive: .*: passfile= is not taken in a lock's URL"
	assert [ ! -e "$T/ran" ]
	LOCKBOX_PG_HELPER=$T/no-helper run -125 --separate-stderr "$LOCKBOX" mutex "postgresql://u:secret@127.0.0.1:1/db?lock=x" true
	assert_stderr "mutex: postgresql://u:***@127.0.0.1:1/db?lock=x: cannot run the PostgreSQL helper $T/no-helper: No such file or directory (it comes with the package lockbox-postgresql)"
}

# bats test_tags=lockkind
@test "a build tree's lockbox runs the PostgreSQL helper built beside it, without LOCKBOX_PG_HELPER" {
	[[ $LOCKBOX == "$LOCKBOX_BUILDDIR/lockbox" && -x $LOCKBOX_BUILDDIR/lockbox-pg ]] ||
		skip "needs a build tree's lockbox and lockbox-pg"
	grep -q -- '--disable-source-paths' "$LOCKBOX_BUILDDIR/config.log" &&
		skip "built with --disable-source-paths: the installed helper only"
	# the helper answers: no server at port 1 (not: no helper at the installed path)
	run -125 --separate-stderr env -u LOCKBOX_PG_HELPER "$LOCKBOX" mutex "postgresql://127.0.0.1:1/db?lock=x" touch "$T/ran"
	assert_stderr_regex "^mutex: $(re_quote "postgresql://127.0.0.1:1/db?lock=x"): cannot connect: "
	assert [ ! -e "$T/ran" ]
}

# bats test_tags=lockkind
@test "no secret of a postgresql:// URL is ever printed, even when no server answers" {
	local url='postgresql://u:pw1@127.0.0.1:1/db?password=pw2&sslpassword=pw3&%70assword=pw4&lock=x&application_name=a@b'
	local shown='postgresql://u:***@127.0.0.1:1/db?password=***&sslpassword=***&%70assword=***&lock=x&application_name=a@b'
	run -125 --separate-stderr "$LOCKBOX" mutex -E 0 "$url" touch "$T/ran"
	assert_stderr_regex "^mutex: $(re_quote "$shown"): (cannot connect: .*|this lockbox was built without PostgreSQL support \(configure --with-libpq\))\$"
	run -125 --separate-stderr "$LOCKBOX" slots "$url" check
	assert_stderr_regex "^slots: $(re_quote "$shown"): (cannot connect|cannot run the PostgreSQL helper|this lockbox was built)"
	run -125 --separate-stderr "$LOCKBOX" adaptive -d "${url%%&lock=x*}&lock=x" job true
	assert_stderr "adaptive: invalid state database 'postgresql://u:***@127.0.0.1:1/db?password=***&sslpassword=***&%70assword=***&lock=x': lock= comes from NAME
Try 'lockbox adaptive --help'."
	# the helper that cannot be run is no excuse either
	LOCKBOX_PG_HELPER=$T/missing run -125 --separate-stderr "$LOCKBOX" mutex "$url" true
	assert_stderr_regex "^mutex: $(re_quote "$shown"): (cannot connect|cannot run the PostgreSQL helper|this lockbox was built)"
	assert [ ! -e "$T/ran" ]
}

# --- messages quote what they were given on one line, escaped ---------

# bats test_tags=lockkind,wait
@test "control bytes and newlines in arguments are escaped in messages, one line each" {
	run -125 --separate-stderr "$LOCKBOX" slots -w $'1\x01\e[31m' "$F" 2 true
	assert_stderr "slots: invalid duration '1\\x01\\x1b[31m': expected a number of seconds, or with units (ms s sec m min h hr d) such as 90s, 10min or 1h30m
Try 'lockbox slots --help'."
	run -125 --separate-stderr "$LOCKBOX" mutex -E $'1\n2\\3\t\r' "$F" true
	assert_stderr "mutex: invalid exit code '1\\n2\\\\3\\t\\r': expected 0 to 255
Try 'lockbox mutex --help'."
	# bytes that are no UTF-8, and C1 controls (CSI), too; characters stay
	run -125 --separate-stderr "$LOCKBOX" slots "$F" $'\xff\xc2\x9b\xc3\xa9' true
	assert_stderr "slots: invalid MAX '\\xff\\xc2\\x9bé': expected a whole number from 1 to 10000, or +N, -N or P% of the processors
Try 'lockbox slots --help'."
	# a lock file's name in an error message, too
	run -125 --separate-stderr "$LOCKBOX" mutex "$T/no"$'\n'"dir/lock" true
	assert_stderr "mutex: $T/no\\ndir/lock: no such directory $T/no\\ndir; lockbox creates the lock file, not its directory"
	assert [ ! -e "$F" ]
}

# --- licence ----------------------------------------------------------

# The programs Makefile.am builds (its NAME_PROGRAMS lines), one a
# line, as paths in the build tree: an in-tree build (the Debian
# package's) leaves them beside the sources.
makefile_programs() {
	awk '/^[a-z_]+_PROGRAMS =/ { for (i = 3; i <= NF; i++) print $i }' "$1"
}

@test "the tree has a LICENSE and every source file names it by SPDX id" {
	[[ -n ${LOCKBOX_SRCDIR:-} && -f $LOCKBOX_SRCDIR/Makefile.am ]] ||
		skip "needs the source tree (LOCKBOX_SRCDIR)"
	assert [ -f "$LOCKBOX_SRCDIR/LICENSE" ]
	run -0 grep -q '^ISC License' "$LOCKBOX_SRCDIR/LICENSE"
	local f p missing=() built=() unignored=()
	mapfile -t built < <(makefile_programs "$LOCKBOX_SRCDIR/Makefile.am")
	assert [ "${#built[@]}" -ge 4 ]
	# what a build leaves in the tree is no source file, and git ignores it
	local -a skip_built=()
	for p in "${built[@]}"; do
		skip_built+=(! -path "$p")
		[[ ! -f $LOCKBOX_SRCDIR/.gitignore ]] || grep -qxF "/$p" "$LOCKBOX_SRCDIR/.gitignore" ||
			unignored+=("$p")
	done
	assert_equal "${unignored[*]}" ""
	while IFS= read -r f; do
		head -n 3 "$f" | grep -q 'SPDX-License-Identifier: ISC' || missing+=("$f")
	done < <(cd "$LOCKBOX_SRCDIR" && find src shell man tests tools bench .ci configure.ac Makefile.am \
		-type f ! -name '*.md' ! -name '*.log' ! -name '*.trs' ! -name '*.o' "${skip_built[@]}" \
		! -path '*/.deps/*' ! -path 'bench/results/*' ! -name '.dirstamp' -print | sed "s|^|$LOCKBOX_SRCDIR/|")
	assert_equal "${missing[*]}" ""
}

# to_full COMMAND...: COMMAND with its stdout on a full disk.
to_full() {
	"$@" >/dev/full
}

# bats test_tags=lockkind
@test "stdout on a full disk: every applet's printing path that returns fails 125 with one message" {
	local out
	run -0 "$LOCKBOX" slots "$F" 2 true
	run -0 "$LOCKBOX" adaptive -d "$T" job true
	for out in "--help" "--version" "--list" "slots --help" "mutex -h" \
	    "waitfor --help" "adaptive --help" "slots $F check" "slots --json $F check" \
	    "mutex $F list" "slots --json $F list" "adaptive -d $T status" \
	    "adaptive -d $T --json status job"; do
		# shellcheck disable=SC2086 # the words of $out are the arguments
		run -125 --separate-stderr to_full "$LOCKBOX" $out
		assert_output ""
		assert_stderr_regex "^(lockbox|slots|mutex|waitfor|adaptive): write error: No space left on device$"
	done
	# a command's own output is the command's: its status passes through
	run -1 --separate-stderr to_full "$LOCKBOX" slots "$F" 2 echo hi
	assert_stderr_regex "^echo: write error"
}
