#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# shellcheck shell=bats
# The multicall binary: dispatch, --help/--version/--list, the command
# exec'd, closed standard fds, MAX, and bad input that leaves a lock file
# as it was. Every exit status and usage error, one row each, is in
# quick.bats.

load test_helper
# bats file_tags=packaging

# The applets Makefile.am builds: those it links in bindir
# (LINKED_APPLETS, one a line) and the others its APPLETS line names.
makefile_applets() {
	awk '/^LINKED_APPLETS =/ { on = 1; next }
	    on { on = /\\$/; gsub(/[\\ \t]/, ""); if ($0 != "") print; next }
	    /^APPLETS = \$\(LINKED_APPLETS\)/ {
		for (i = 4; i <= NF; i++) print $i }' "$1"
}

# --- dispatch ---------------------------------------------------------

# bats test_tags=lockkind,quick
@test "lockbox slots runs the command holding a slot" {
	run -0 --separate-stderr "$LOCKBOX" slots "$F" 2 sh -c "$SAY_SLOT"
	assert_output "slot 1"
	assert_stderr ""
	assert [ -f "$F" ]
}

# bats test_tags=lockkind,quick
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

# bats test_tags=lockkind,quick
@test "a link named mutex is the mutex applet" {
	ln -s "$LOCKBOX" "$T/mutex"
	run -0 --separate-stderr "$T/mutex" "$F" sh -c "$SAY_SLOT"
	assert_output "slot 1"
	run -125 --separate-stderr "$T/mutex"
	assert_stderr "mutex: missing LOCKFILE"$'\n'"Try 'mutex --help'."
}

# bats test_tags=quick
@test "--help for lockbox goes to stdout, status 0" {
	local opt
	for opt in --help -h; do
		run -0 --separate-stderr "$LOCKBOX" "$opt"
		assert_stderr ""
		assert_line --index 0 "usage: lockbox APPLET [ARG...]"
		assert_line --regexp '^Applets: '
	done
}

# bats test_tags=lockkind,quick
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

# bats test_tags=quick
@test "--version names the version and the lock kind" {
	run -0 --separate-stderr "$LOCKBOX" --version
	assert_stderr ""
	assert_output --regexp '^lockbox [0-9]+\.[0-9]+[^ ]* \((open-file-description|classic POSIX) locks\)$'
}

# bats test_tags=lockkind,quick
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

# bats test_tags=lockkind,quick
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

# --- the command ------------------------------------------------------

# bats test_tags=lockkind,quick
@test "the command is exec'd: it runs as the lockbox process itself" {
	# shellcheck disable=SC2016 # expanded by the two sh, not here
	run -0 --separate-stderr sh -c 'echo $$; exec "$1" mutex "$2" sh -c '\''echo $$'\' sh "$LOCKBOX" "$F"
	assert_equal "${#lines[@]}" 2
	assert_equal "${lines[0]}" "${lines[1]}"
}

# --- closed standard fds ----------------------------------------------

# bats test_tags=lockkind,quick
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

# bats test_tags=lockkind,quick
@test "stdout closed: the command's output goes nowhere, never into the lock file" {
	# shellcheck disable=SC2016 # expanded by the sh
	run -0 sh -c '"$1" mutex "$2" sh -c "echo said-on-stdout; echo there >&2" >&-' sh "$LOCKBOX" "$F"
	run -0 --separate-stderr "$LOCKBOX" mutex "$F" true
	assert_stderr ""
	# (a word no record's binary fields spell by chance, as "hi" once did)
	run -1 grep -q said-on-stdout "$F"
}

# bats test_tags=lockkind,quick
@test "stdin closed: the lock file is not the command's stdin" {
	# shellcheck disable=SC2016 # expanded by the sh
	run -0 sh -c '"$1" mutex "$2" sh -c '\''cat; echo "rc=$?"'\'' <&-' sh "$LOCKBOX" "$F"
	assert_output "rc=0"
	run -0 --separate-stderr "$LOCKBOX" mutex "$F" true
}

# bats test_tags=lockkind,quick
@test "adaptive with stdio closed keeps its state file sound" {
	export LOCKBOX_DIR=$T/state
	# shellcheck disable=SC2016 # expanded by the sh
	run -0 sh -c '"$1" adaptive -e 0 job sh -c "echo hi; echo there >&2" >&- 2>&-' sh "$LOCKBOX"
	run -0 --separate-stderr "$LOCKBOX" adaptive -e 0 job true
	assert_stderr ""
	run -1 grep -q -e hi -e there "$T"/state/job-*.lock
}

# bats test_tags=lockkind,wait,quick
@test "options stop at the first positional: the command's options are its own" {
	run -0 --separate-stderr "$LOCKBOX" slots "$F" 1 sh -c 'echo "$@"' sh -q -w 1 -E 3 --json
	assert_output "-q -w 1 -E 3 --json"
	run -0 --separate-stderr "$LOCKBOX" slots "$F" 1 -- sh -c 'echo ran'
	assert_output "ran"
	run -0 --separate-stderr "$LOCKBOX" mutex "$F" -- sh -c 'echo ran'
	assert_output "ran"
}

# --- MAX, and bad input ---------------------------------------------------

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

# bats test_tags=lockkind,quick
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

# bats test_tags=lockkind,quick
@test "the largest MAX is accepted" {
	run -0 --separate-stderr "$LOCKBOX" slots "$F" 10000 sh -c "$SHOW_SLOT"
	assert_output 1
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
