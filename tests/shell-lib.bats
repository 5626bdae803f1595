#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# shellcheck shell=bats
# The bash library (lockbox --shell-lib): scripts that source it, each run
# twice, with `bash -u` and with `set -euo pipefail` at the top.
#
# The file runs twice as well. As shell-lib.bats, the library takes its
# locks through its loadable builtin, inside the shell (when the build
# has one); as shell-lib-fallback.bats, a link to this file, with
# LOCKBOX_BUILTIN=0, through the binary. Every case holds on both paths,
# but for the few that are about one of them (need_builtin), and the
# 200-script storm, which the builtin's run alone makes.

load test_helper

if [[ ${BATS_TEST_FILENAME##*/} == shell-lib-fallback.bats ]]; then
	LIB_PATH=binary
	export LOCKBOX_BUILTIN=0
else
	LIB_PATH=builtin
fi

setup() {
	lockbox_setup
	builtin_bash
}

# builtin_so: the loadable builtin the library under test loads, or
# nothing (a build without one).
builtin_so() {
	sed -n "s/^_lockbox_builtin_so='\\(.*\\)'\$/\\1/p" "$("$LOCKBOX" --shell-lib)"
}

# A builtin built with AddressSanitizer loads only into a bash that has
# its runtime (the library checks, and falls back to the binary when it is
# not there): in such a build, `bash` is this bash with the runtime
# preloaded, and without the leak check at its exit, which would report
# bash's own.
builtin_bash() {
	local so rt
	[[ $LIB_PATH == builtin ]] || return 0
	grep -q "^_lockbox_builtin_needs='libasan'\$" "$("$LOCKBOX" --shell-lib)" || return 0
	so=$(builtin_so)
	rt=$(ldd "$so" | awk '$1 ~ /^libasan/ { print $3 }')
	[[ -n $rt ]] || return 0
	mkdir -p "$T/asan-bin"
	# bash itself, not sh: it passes exported functions on, dash drops them
	# shellcheck disable=SC2016 # expanded by the wrapper
	printf '%s\n' "#!$BASH" "export LD_PRELOAD=$rt" \
		'export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0' \
		"exec $BASH \"\$@\"" >"$T/asan-bin/bash"
	chmod +x "$T/asan-bin/bash"
	PATH=$T/asan-bin:$PATH
}

# in_shell: this run's library is the builtin's (else the bash functions).
in_shell() {
	[[ $LIB_PATH == builtin && -n $(builtin_so) ]]
}

# need_builtin: the case is about the builtin's own ways (this file's
# builtin run, in a build that has one).
need_builtin() {
	[[ $LIB_PATH == builtin ]] || skip "about the builtin; this run forces the binary"
	[[ -n $(builtin_so) ]] || skip "this build has no loadable builtin (configure found no bash headers?)"
}


# both FUNCTION: run a scenario once per mode; F and the scripts per mode.
both() {
	local mode
	for mode in u strict; do
		MODE=$mode
		F=$T/$MODE.lock
		export MODE F T
		"$@"
		kill_tracked
	done
}

# script NAME: stdin becomes $T/NAME.$MODE, a script that sources the library.
script() {
	local lib
	lib=$("$LOCKBOX" --shell-lib)
	{
		if [[ $MODE == strict ]]; then
			printf '%s\n' 'set -euo pipefail'
		fi
		printf '. %q\n' "$lib"
		cat
	} >"$T/$1.$MODE"
}

# cmd NAME: the command line that runs script NAME in this mode, in CMD;
# the shell alone in SH.
cmd() {
	if [[ $MODE == strict ]]; then
		SH=(bash)
	else
		SH=(bash -u)
	fi
	CMD=("${SH[@]}" "$T/$1.$MODE")
}

# The holder: takes the mutex on $F, with "child" also starts a background
# sleep that inherits the fd, says it is ready, then waits with no child of
# its own (read on a FIFO nobody writes).
hold_script() {
	mkfifo "$T/fifo.$MODE"
	script hold <<'EOF'
acquire_mutex "$F" || exit
if [[ ${1-} == child ]]; then
	sleep 600 >/dev/null 2>&1 3>&- &
	printf '%s\n' "$!" >"$T/child.$MODE"
fi
printf '%s\n' "$$" >"$T/ready.$MODE.tmp"
mv "$T/ready.$MODE.tmp" "$T/ready.$MODE"
read -r -t 600 _ <>"$T/fifo.$MODE" || :
EOF
	cmd hold
}

# start_hold [child]: run the holder in the background until it holds $F.
start_hold() {
	rm -f "$T/ready.$MODE" "$T/child.$MODE"
	spawn "${CMD[@]}" "$@"
	HOLD_PID=$SPAWN_PID
	wait_for holder_ready "$T/ready.$MODE" "$HOLD_PID"
	assert_equal "$(cat "$T/ready.$MODE")" "$HOLD_PID"
	if [[ ${1-} == child ]]; then
		CHILD_PID=$(cat "$T/child.$MODE")
		track_pid "$CHILD_PID"
	fi
}

# bats test_tags=lockkind
# shellcheck disable=SC2030 # bats' run sets output and lines for the test
@test "lockbox --shell-lib prints the library's path, in a build tree the build tree's copy" {
	run -0 --separate-stderr "$LOCKBOX" --shell-lib
	# shellcheck disable=SC2154 # set by bats' run
	assert_equal "$stderr" ""
	assert [ -f "$output" ]
	if [[ $LOCKBOX == "$LOCKBOX_BUILDDIR/lockbox" ]]; then
		# beside the binary, and naming it: no PATH needed
		assert_equal "$output" "$LOCKBOX_BUILDDIR/lockbox.bash"
		run -0 grep -x "_lockbox_built='$LOCKBOX'" "$output"
	fi
	# the library's calls: builtins, or the bash functions without one
	local kind=function
	if in_shell; then
		kind=builtin
	fi
	# shellcheck disable=SC2016 # expanded by the child shell
	run -0 bash -c '. "$("$LOCKBOX" --shell-lib)" && type -t acquire_mutex release_mutex mutex \
		acquire_slot release_slot waitfor trap'
	assert_equal "${lines[*]}" "$kind $kind $kind $kind $kind $kind $kind"
}

# shellcheck disable=SC2031 # bats' run sets output and lines for the test
scenario_busy_then_kill() {
	hold_script
	start_hold
	local p u0
	p=$(pace)
	u0=${EPOCHREALTIME/[.,]/}
	run -75 --separate-stderr "${CMD[@]}"
	assert_equal "$output" ""
	# the holder is named for the script its shell runs, without its arguments
	assert_regex "$stderr" "^mutex: $(re_quote "$F"): held by PID $HOLD_PID \\($(re_quote "hold.$MODE"), $AGE_RE\\)\$"
	# fast: no waiting on the holder (a script's start and one refusal)
	within_paces "$u0" "$p" 500
	# SIGKILL, no child of its own: the kernel frees the lock at once
	stop_pid "$HOLD_PID"
	run -0 "$LOCKBOX" mutex "$F" check
	assert_output 0
	start_hold
	stop_pid "$HOLD_PID"
}

# bats test_tags=lockkind,wait
@test "a second copy fails fast with 75; after SIGKILL of the first, the next copy gets it" {
	need_ofd	# the library locks the fd its shell opened: --fd
	both scenario_busy_then_kill
}

scenario_waiter_named() {
	hold_script
	start_hold
	script waiter <<'EOF'
acquire_mutex -w 60 "$F" || exit
EOF
	cmd waiter
	spawn "${CMD[@]}"
	local waiter=$SPAWN_PID
	wait_for waiting_on "$F" 1
	# the waiter, whichever process waits (the shell, or the binary for it), is named for the script
	run -0 "$LOCKBOX" mutex "$F" list
	assert_line --index 2 --regexp "^- +[0-9]+ +$AGE_RE +waiting 1st: $(re_quote "waiter.$MODE")\$"
	stop_pid "$HOLD_PID"
	reap "$waiter"
	assert_equal "$REAP_STATUS" 0
}

# bats test_tags=lockkind,wait
@test "a script waiting in acquire_mutex -w is listed as the script, as it will hold the lock" {
	need_ofd	# the library locks the fd its shell opened: --fd
	both scenario_waiter_named
}

scenario_kill_with_child() {
	hold_script
	start_hold child
	stop_pid "$HOLD_PID"
	# the sleep shares the open file: the lock stays held while it runs
	run -0 "$LOCKBOX" mutex "$F" check
	assert_output 1
	run -75 --separate-stderr "${CMD[@]}"
	stop_pid "$CHILD_PID"
	run -0 "$LOCKBOX" mutex "$F" check
	assert_output 0
	start_hold
}

# bats test_tags=lockkind
@test "after SIGKILL, a child that inherited the fd keeps the lock until it exits" {
	need_ofd
	both scenario_kill_with_child
}

scenario_own_trap_before() {
	script trap-before <<'EOF'
trap 'printf "mine %s\n" "$?" >>"$T/log.$MODE"' EXIT
acquire_mutex "$F"
sleep 600 >/dev/null 2>&1 3>&- &
printf '%s\n' "$!" >"$T/child.$MODE"
"$LOCKBOX" mutex "$F" check
exit 3
EOF
	cmd trap-before
	run -3 --separate-stderr "${CMD[@]}"
	track_pid "$(cat "$T/child.$MODE")"
	assert_output 1
	assert_equal "$stderr" ""
	assert_equal "$(cat "$T/log.$MODE")" "mine 3"
	# released although the background sleep still has the fd
	run -0 "$LOCKBOX" mutex "$F" check
	assert_output 0
}

# bats test_tags=lockkind
# shellcheck disable=SC2030 # bats' run sets output and lines for the test
@test "a script's EXIT trap set before acquiring: both it and the release run, status kept" {
	need_ofd	# the library locks the fd its shell opened: --fd
	both scenario_own_trap_before
}

# shellcheck disable=SC2031 # bats' run sets output and lines for the test
scenario_own_trap_after() {
	rm -f "$T/log.$MODE"
	script trap-after <<'EOF'
acquire_mutex "$F"
trap 'printf "mine %s\n" "$?" >>"$T/log.$MODE"' EXIT
trap -p EXIT
# the usual save and restore, through a subshell
saved=$(trap -p EXIT)
trap - EXIT
eval "$saved"
printf '%s\n' "$saved"
sleep 600 >/dev/null 2>&1 3>&- &
printf '%s\n' "$!" >"$T/child.$MODE"
false
EOF
	cmd trap-after
	run -1 --separate-stderr "${CMD[@]}"
	track_pid "$(cat "$T/child.$MODE")"
	# the script sees its own trap, not the library's
	local want="trap -- 'printf \"mine %s\\n\" \"\$?\" >>\"\$T/log.\$MODE\"' EXIT"
	assert_equal "${lines[*]}" "$want $want"
	assert_equal "$(cat "$T/log.$MODE")" "mine 1"
	run -0 "$LOCKBOX" mutex "$F" check
	assert_output 0
}

# bats test_tags=lockkind
@test "a script's EXIT trap set after acquiring: both it and the release run" {
	need_ofd	# the library locks the fd its shell opened: --fd
	both scenario_own_trap_after
}

scenario_trap_exit_calls_exit() {
	rm -f "$T/log.$MODE"
	# the seed's pattern: the script's trap ends with exit; trap - EXIT
	# before it drops only the script's command, never the release
	script trap-exit <<'EOF'
trap 'echo gone >>"$T/log.$MODE"' EXIT
acquire_mutex "$F"
trap - EXIT
trap 'rc=$?; echo "rc $rc" >>"$T/log.$MODE"; exit 7' 0
sleep 600 >/dev/null 2>&1 3>&- &
printf '%s\n' "$!" >"$T/child.$MODE"
exit 5
EOF
	cmd trap-exit
	run -7 "${CMD[@]}"
	track_pid "$(cat "$T/child.$MODE")"
	assert_equal "$(cat "$T/log.$MODE")" "rc 5"
	run -0 "$LOCKBOX" mutex "$F" check
	assert_output 0
}

# bats test_tags=lockkind
# shellcheck disable=SC2030 # bats' run sets output and lines for the test
@test "a script's EXIT trap that calls exit, and trap - EXIT, keep the release" {
	need_ofd	# the library locks the fd its shell opened: --fd
	both scenario_trap_exit_calls_exit
}

# shellcheck disable=SC2031 # bats' run sets output and lines for the test
scenario_background_release() {
	script bg <<'EOF'
acquire_mutex "$F"
sleep 300 >/dev/null 2>&1 3>&- &
printf '%s\n' "$!" >"$T/child.$MODE"
release_mutex
"$LOCKBOX" mutex "$F" check
# and when the script exits holding it, with a child still running
acquire_mutex "$F"
sleep 300 >/dev/null 2>&1 3>&- &
printf '%s\n' "$!" >"$T/child2.$MODE"
"$LOCKBOX" mutex "$F" check
EOF
	cmd bg
	run -0 --separate-stderr "${CMD[@]}"
	track_pid "$(cat "$T/child.$MODE")"
	track_pid "$(cat "$T/child2.$MODE")"
	assert_equal "$stderr" ""
	assert_equal "${lines[*]}" "0 1"
	# both sleeps still run and still have the lock file open
	kill -0 "$(cat "$T/child.$MODE")"
	kill -0 "$(cat "$T/child2.$MODE")"
	run -0 "$LOCKBOX" mutex "$F" check
	assert_output 0
	run -0 "$LOCKBOX" mutex "$F" true
}

# bats test_tags=lockkind
# shellcheck disable=SC2030 # bats' run sets output and lines for the test
@test "release_mutex, and exit, free the lock although a background child has the fd" {
	need_ofd
	both scenario_background_release
}

# shellcheck disable=SC2031 # bats' run sets output and lines for the test
scenario_subshell_release() {
	script sub <<'EOF'
release_mutex "$F"
printf 'unheld %s\n' "$?"
acquire_mutex "$F"
( release_mutex "$F"; printf 'sub %s\n' "$?" )
( release_mutex; mutex release; printf 'sub2 %s\n' "$?" )
"$LOCKBOX" mutex "$F" check
# a subshell cannot take it either: the parent holds it
( acquire_mutex "$F" ) && exit 9
printf 'sub acquire 75\n'
# taking it again in the shell that holds it changes nothing
acquire_mutex "$F"
release_mutex "$F"
release_mutex "$F"
printf 'twice %s\n' "$?"
"$LOCKBOX" mutex "$F" check
EOF
	cmd sub
	run -0 --separate-stderr "${CMD[@]}"
	assert_equal "${lines[*]}" "unheld 0 sub 0 sub2 0 1 sub acquire 75 twice 0 0"
	assert_regex "$stderr" "^mutex: $(re_quote "$F"): held by PID [0-9]+ "
}

# bats test_tags=lockkind
@test "release_mutex in a subshell keeps the parent's lock; without holding it is a no-op" {
	need_ofd	# the library locks the fd its shell opened: --fd
	both scenario_subshell_release
}

scenario_waitfor_takes_it() {
	script wait <<'EOF'
waitfor -v 30s 500ms mutex acquire -q "$F"
printf '%s\n' "$EPOCHREALTIME" >"$T/got.$MODE"
"$LOCKBOX" mutex "$F" list
EOF
	cmd wait
	spawn "$LOCKBOX" mutex "$F" sleep 600
	local holder=$SPAWN_PID
	wait_for held_is "$F" 1
	spawn "${CMD[@]}"
	local waiter=$SPAWN_PID out=$SPAWN_OUT err=$SPAWN_ERR p
	wait_for grep -q 'attempt 2 exited 75; next in 500ms' "$err"
	p=$(pace)
	local freed=$EPOCHREALTIME
	stop_pid "$holder"
	reap "$waiter"
	assert_equal "$REAP_STATUS" 0
	# within one interval (500ms) of the release, and a few paces of the machine
	local us=${freed/./} got
	got=$(cat "$T/got.$MODE")
	p=$(pace "$p")
	assert [ $((${got/./} - us)) -lt $((500000 + 50 * p)) ]
	assert_regex "$(sed -n 2p "$out")" "^1 +$waiter +$AGE_RE +$(re_quote "wait.$MODE")\$"
	assert_regex "$(tail -n 1 "$err")" '^waitfor: attempt [0-9]+ succeeded$'
}

# bats test_tags=lockkind
# shellcheck disable=SC2030 # bats' run sets output and lines for the test
@test "waitfor TIMEOUT INTERVAL mutex acquire waits and takes the lock within one interval" {
	need_ofd	# the library locks the fd its shell opened: --fd
	both scenario_waitfor_takes_it
}

# shellcheck disable=SC2031 # bats' run sets output and lines for the test
scenario_waitfor_gives_up() {
	script give-up <<'EOF'
start=$EPOCHREALTIME
rc=0
waitfor 1s 200ms mutex acquire "$F" || rc=$?
end=$EPOCHREALTIME
printf '%s %s\n' "$rc" $(((${end/./} - ${start/./}) / 1000))
exit "$rc"
EOF
	cmd give-up
	spawn "$LOCKBOX" mutex "$F" sleep 600
	wait_for held_is "$F" 1
	local p
	p=$(pace)
	run -75 --separate-stderr "${CMD[@]}"
	local took=${output#75 }
	p=$(pace "$p")
	# its timeout (1s), one interval (200ms) past it at the most, and a few paces
	assert [ "$took" -ge 1000 ]
	assert [ "$took" -lt $((1200 + 200 * p / 1000)) ]
	assert_regex "$stderr" "mutex: $(re_quote "$F"): held by PID $SPAWN_PID \\(sleep, "
	assert_regex "${stderr##*$'\n'}" '^waitfor: gave up after 1s \([0-9]+ attempts\); last status 75$'
}

# bats test_tags=lockkind
# shellcheck disable=SC2030 # bats' run sets output and lines for the test
@test "waitfor gives up with 75 when the holder outlives the timeout" {
	need_ofd	# the library locks the fd its shell opened: --fd
	both scenario_waitfor_gives_up
}

# shellcheck disable=SC2031 # bats' run sets output and lines for the test
scenario_waitfor_args() {
	script waitfor-args <<'EOF'
count=0
# shellcheck disable=SC2031 # bats' run sets output and lines for the test
bump() { count=$((count + 1)); ((count >= 3)) || return 4; }
waitfor 3 5ms bump
printf 'count %s\n' "$count"
count=-10
rc=0; waitfor --retry-on 1 1m 1ms bump || rc=$?
printf 'stop %s %s\n' "$rc" "$count"
rc=0; waitfor -q 0 1 false || rc=$?
printf 'once %s\n' "$rc"
rc=0; waitfor 1 x true || rc=$?
printf 'bad %s\n' "$rc"
rc=0; waitfor 1 1 nosuchcommand || rc=$?
printf 'missing %s\n' "$rc"
# 125, 126 and 127 say no attempt can do better: retried only when listed
cannot() { count=$((count + 1)); return "$1"; }
for code in 125 126 127; do
	count=0
	rc=0; waitfor 1m 1ms cannot "$code" || rc=$?
	printf 'cannot %s %s\n' "$rc" "$count"
done
count=0
rc=0; waitfor -q --retry-on 125 200ms 1ms cannot 125 || rc=$?
printf 'listed %s %s\n' "$rc" "$((count > 1))"
EOF
	cmd waitfor-args
	run -0 --separate-stderr "${CMD[@]}"
	assert_equal "${lines[*]}" "count 3 stop 4 -9 once 1 bad 125 missing 127 cannot 125 1 cannot 126 1 cannot 127 1 listed 125 1"
	assert_equal "$stderr" "waitfor: invalid INTERVAL 'x': expected a duration like 5 (seconds), 500ms or 1m
Try 'lockbox waitfor --help'.
waitfor: cannot run 'nosuchcommand': No such file or directory"
}

@test "waitfor runs shell functions in this shell; --retry-on, -q, 125 to 127 not retried, bad arguments" {
	both scenario_waitfor_args
}

# bats test_tags=lockkind
# shellcheck disable=SC2030 # bats' run sets output and lines for the test
@test "waitfor's usage messages are the applet's" {
	"$LOCKBOX" --list | grep -qx waitfor || skip "no waitfor applet in this build"
	local lib args
	lib=$("$LOCKBOX" --shell-lib)
	for args in "" "1" "1 1" "x 1 true" "1 5q true" "1 1h30 true" "99999999999999 1 true" \
		"--retry-on 300 1 1 true" "--retry-on= 1 1 true" "-z 1 1 true" "--bogus 1 1 true"; do
		# shellcheck disable=SC2086 # split into arguments on purpose
		run --separate-stderr "$LOCKBOX" waitfor $args
		local want_status=$status want=$stderr
		# shellcheck disable=SC2016,SC2086 # expanded by the child shell; split into arguments on purpose
		run --separate-stderr bash -uc '. "$1"; shift; waitfor "$@"' sh "$lib" $args
		assert_equal "$status $stderr" "$want_status $want"
	done
}

# first_last: the first and the last line of stdin, with no count of attempts
first_last() {
	awk '{ sub(/\([0-9]+ attempts?\)/, "(N)") } NR == 1 { print } { last = $0 } END { if (NR > 1) print last }'
}

# shellcheck disable=SC2030,SC2016,SC2154 # bats' run sets the results; expanded by the child shell
@test "waitfor in the library: min, sec and hr, -v on a bare TIMEOUT, and -V, as the applet has them" {
	local lib args
	lib=$("$LOCKBOX" --shell-lib)
	for args in "-v 0.01 0.2sec false" "0.01min 0.2sec false" "-v 0.0001hr 0 false" "1050ms 350ms false" "-V" "--version"; do
		# shellcheck disable=SC2086 # split into arguments on purpose
		run --separate-stderr "$LOCKBOX" waitfor $args
		# the count of attempts depends on the machine's load: the first and last lines, less it
		local want_status=$status want_out=$output want
		want=$(first_last <<<"$stderr")
		# shellcheck disable=SC2016,SC2086 # expanded by the child shell; split into arguments on purpose
		run --separate-stderr bash -uc '. "$1"; shift; waitfor "$@"' sh "$lib" $args
		assert_equal "$status $(first_last <<<"$stderr") $output" \
			"$want_status $want $want_out"
	done
	run -1 --separate-stderr bash -uc '. "$1"; waitfor -v 0.01 0.2sec false' sh "$lib"
	assert_equal "${stderr_lines[0]}" "waitfor: TIMEOUT 0.01 = 0.01 minutes (a bare number here is minutes; 0.01s is seconds)"
	assert_regex "${stderr_lines[-1]}" '^waitfor: gave up after 600ms \([0-9]+ attempts\); last status 1$'
}

# bats test_tags=lockkind
# shellcheck disable=SC2030 # bats' run sets output and lines for the test
@test "POSIX mode (bash --posix, set -o posix, bash run as sh): the library loads and locks, releases on exit, and the script goes on" {
	need_ofd	# the library locks the fd its shell opened: --fd
	local lib how n=0
	local -a sh
	lib=$("$LOCKBOX" --shell-lib)
	ln -s "$(command -v bash)" "$T/sh"
	# the script writes its child's PID into $T
	export T
	cat >"$T/posix.sh" <<'EOF'
# the script's own EXIT trap, set before the first acquire: taken over, still run
if [ -n "${OWN-}" ]; then trap 'printf "own trap\n"' EXIT; fi
acquire_mutex "$F" || exit
"$LOCKBOX" mutex "$F" check
release_mutex
"$LOCKBOX" mutex "$F" check
acquire_slot "$F.slots" 2 || exit
printf 'slot %s\n' "$LOCKBOX_SLOT"
waitfor 0 0 true
printf 'waitfor %s\n' "$?"
acquire_mutex "$F" || exit
# a child that inherits the fd must not keep the lock once the script ends
sleep 600 >/dev/null 2>&1 3>&- &
printf '%s\n' "$!" >"$T/child"
printf 'end\n'
EOF
	for how in --posix set-o-posix as-sh; do
		# shellcheck disable=SC2016 # expanded by the shell under test
		case $how in
		--posix) sh=(bash --posix -c '. "$1" || exit; . "$2"' sh "$lib" "$T/posix.sh") ;;
		set-o-posix) sh=(bash -c 'set -o posix; . "$1" || exit; . "$2"' sh "$lib" "$T/posix.sh") ;;
		as-sh) sh=("$T/sh" -c '. "$1" || exit; . "$2"' sh "$lib" "$T/posix.sh") ;;
		esac
		F=$T/$how.lock OWN='' run -0 --separate-stderr "${sh[@]}"
		track_pid "$(cat "$T/child")"
		assert_stderr ""
		assert_output "1
0
slot 1
waitfor 0
end"
		F=$T/$how.own.lock OWN=1 run -0 --separate-stderr "${sh[@]}"
		track_pid "$(cat "$T/child")"
		assert_stderr ""
		assert_output "1
0
slot 1
waitfor 0
end
own trap"
		run -0 "$LOCKBOX" mutex "$T/$how.own.lock" check
		assert_output 0
		# the release ran at exit: the child's fd holds nothing
		run -0 "$LOCKBOX" mutex "$T/$how.lock" check
		assert_output 0
		run -0 "$LOCKBOX" slots "$T/$how.lock.slots" check
		assert_output 0
		n=$((n + 1))
	done
	assert_equal "$n" 3
}

# shellcheck disable=SC2031 # bats' run sets output and lines for the test
scenario_slots_and_several() {
	script several <<'EOF'
acquire_slot "$F.slots" 2
printf 'slot %s\n' "$LOCKBOX_SLOT"
sh -c 'printf "child sees %s\n" "$LOCKBOX_SLOT"'
acquire_mutex "$F.a"
acquire_mutex "$F.b"
for f in "$F.slots" "$F.a" "$F.b"; do
	"$LOCKBOX" slots "$f" list | awk -v me="$$" 'NR > 1 && $2 == me { m = 1 } END { print m ? "mine" : "other" }'
done
release_slot "$F.slots"
printf 'after %s\n' "${LOCKBOX_SLOT-unset}"
"$LOCKBOX" slots "$F.slots" check
"$LOCKBOX" mutex "$F.a" check
release_mutex
"$LOCKBOX" mutex "$F.a" check
"$LOCKBOX" mutex "$F.b" check
acquire_slot "$F.slots" 2
acquire_slot "$F.slots" 2
printf 'again %s\n' "$LOCKBOX_SLOT"
rc=0; acquire_slot "$F.slots" || rc=$?
printf 'usage %s\n' "$rc"
EOF
	cmd several
	# slot 1 is someone else's: the script gets slot 2
	spawn "$LOCKBOX" slots "$F.slots" 2 sleep 600
	wait_for held_is "$F.slots" 1
	run -0 --separate-stderr "${CMD[@]}"
	assert_equal "${lines[*]}" "slot 2 child sees 2 mine mine mine after unset 1 1 0 0 again 2 usage 125"
	assert_equal "$stderr" "acquire_slot: usage: acquire_slot [-nqv] [-w DUR] FILE MAX"
	run -0 "$LOCKBOX" slots "$F.slots" check
	assert_output 1
	# a full pool: 75, the binary's words with the file's name
	cmd several
	# shellcheck disable=SC2016 # expanded by the child shell
	run -75 --separate-stderr bash -c '. "$("$LOCKBOX" --shell-lib)"; acquire_slot "$1" 1' sh "$F.slots"
	assert_regex "$stderr" "^slots: $(re_quote "$F.slots"): held by $(named_re "$SPAWN_PID" sleep)\$"
}

# bats test_tags=lockkind
# shellcheck disable=SC2030 # bats' run sets output and lines for the test
@test "acquire_slot sets LOCKBOX_SLOT; release_slot; several locks at once" {
	need_ofd
	both scenario_slots_and_several
}

# shellcheck disable=SC2031 # bats' run sets output and lines for the test
scenario_holder_pid() {
	script pid <<'EOF'
acquire_mutex "$F"
printf 'me %s\n' "$$"
"$LOCKBOX" mutex "$F" list | sed -n 2p
# from a function inside a subshell, the holder is that subshell
( acquire_slot "$F.s" 3; printf 'sub %s\n' "$BASHPID"; "$LOCKBOX" slots "$F.s" list | sed -n 2p )
EOF
	cmd pid
	run -0 --separate-stderr "${CMD[@]}"
	local me=${lines[0]#me }
	assert_regex "${lines[1]}" "^1 +$me +$AGE_RE +$(re_quote "pid.$MODE")\$"
	local sub=${lines[2]#sub }
	assert [ "$sub" != "$me" ]
	assert_regex "${lines[3]}" "^1 +$sub +$AGE_RE +$(re_quote "pid.$MODE")\$"
	assert_equal "$stderr" ""
}

# bats test_tags=lockkind
@test "the holder recorded is the shell that called the function" {
	need_ofd
	both scenario_holder_pid
}

scenario_refusals() {
	script refuse <<'EOF'
rc=0; acquire_mutex "$1" || rc=$?
printf '%s\n' "$rc"
EOF
	cmd refuse
	ln -s "$T/target" "$T/link.$MODE"
	run -0 --separate-stderr "${CMD[@]}" "$T/link.$MODE"
	assert_output 125
	assert_equal "$stderr" "mutex: $T/link.$MODE: is a symbolic link; refusing to follow it"
	assert [ ! -e "$T/target" ]
	mkfifo "$T/fifo.$MODE"
	run -0 --separate-stderr timeout 20 "${CMD[@]}" "$T/fifo.$MODE"
	assert_output 125
	assert_equal "$stderr" "mutex: $T/fifo.$MODE: not a regular file"
	# a file that is not a lock file is locked as mutex locks it, and never written
	printf 'precious\n' >"$T/text.$MODE"
	run -0 --separate-stderr "${CMD[@]}" "$T/text.$MODE"
	assert_output 0
	assert_equal "$stderr" ""
	assert_equal "$(cat "$T/text.$MODE")" precious
	run -0 --separate-stderr "${CMD[@]}" "$T/nodir/x.lock"
	assert_output 125
	assert_equal "$stderr" "mutex: $T/nodir/x.lock: no such directory $T/nodir; lockbox creates the lock file, not its directory"
	# shellcheck disable=SC2016 # expanded by the child shell
	run -0 --separate-stderr bash -c '. "$("$LOCKBOX" --shell-lib)"; mutex grab; echo "$?"'
	assert_output 125
	# not acquire or release: the program's usage
	assert_equal "$stderr" "mutex: missing COMMAND
Try 'lockbox mutex --help'."
}

# bats test_tags=lockkind,privilege,wait
# shellcheck disable=SC2030 # bats' run sets output and lines for the test
@test "refusals: symlink, FIFO, a missing directory, bad usage; a foreign file is locked unwritten" {
	need_ofd
	both scenario_refusals
}

# shellcheck disable=SC2031 # bats' run sets output and lines for the test
scenario_default_file() {
	script default <<'EOF'
acquire_mutex
"$LOCKBOX" mutex "$LOCKBOX_MUTEX_FILE" check
release_mutex
"$LOCKBOX" mutex "$LOCKBOX_MUTEX_FILE" check
EOF
	cmd default
	LOCKBOX_MUTEX_FILE=$F run -0 --separate-stderr "${CMD[@]}"
	assert_equal "${lines[*]}" "1 0"
	# no LOCKBOX_MUTEX_FILE: a file named for the script, in /run/lock when
	# this user may write there, else $XDG_RUNTIME_DIR, else /tmp
	local name=job-$$-$BATS_TEST_NUMBER-$MODE.sh dir=/tmp
	if [[ -d /run/lock && -w /run/lock ]]; then
		dir=/run/lock
	elif [[ -n ${XDG_RUNTIME_DIR-} && -d $XDG_RUNTIME_DIR && -w $XDG_RUNTIME_DIR ]]; then
		dir=$XDG_RUNTIME_DIR
	fi
	cp "$T/default.$MODE" "$T/$name"
	CLEANUP_DIRS+=("$dir/$name.lock")
	LOCKBOX_MUTEX_FILE=$dir/$name.lock run -0 "${SH[@]}" "$T/$name"
	assert_equal "${lines[*]}" "1 0"
	# shellcheck disable=SC2016 # expanded by the child shell
	run -0 --separate-stderr env -u LOCKBOX_MUTEX_FILE "${SH[@]}" -c \
		'. "$("$LOCKBOX" --shell-lib)"; acquire_mutex; "$LOCKBOX" mutex "$1" check' "$T/$name" "$dir/$name.lock"
	assert_output 1
}

# bats test_tags=lockkind,privilege,wait
@test "the default lock file: LOCKBOX_MUTEX_FILE, else one named for the script" {
	need_ofd	# the library locks the fd its shell opened: --fd
	both scenario_default_file
}

# bats test_tags=lockkind
# shellcheck disable=SC2030 # bats' run sets output and lines for the test
@test "200 concurrent scripts count exactly to 200" {
	need_ofd	# the library locks the fd its shell opened: --fd
	# the suite's longest case: the builtin's run makes it, not both
	[[ $LIB_PATH == builtin ]] || skip "made by shell-lib.bats, not again here"
	MODE=strict
	export T
	F=$T/count.lock
	export F
	printf '0\n' >"$T/counter"
	script count <<'EOF'
# generous: 200 turns in a row take long on a loaded or sanitizer build,
# and 30 scripts polling faster than every 200ms would spend the CPU the
# holder needs (each try starts lockbox: costly under a sanitizer)
if (($1 % 2)); then
	waitfor -q 10m 200ms mutex acquire -q "$F"
else
	until acquire_mutex -q "$F"; do
		rc=$?
		((rc == 75)) || exit "$rc"	# only busy is worth another try
		sleep 0.2
	done
fi
n=$(<"$T/counter")
sleep 0.002
printf '%s\n' $((n + 1)) >"$T/counter"
release_mutex
EOF
	local i running=0 failed rc
	# thousands of tries: a sanitizer build's leak check at each exit would
	# cost more than the tries themselves, and other tests check leaks
	export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
	for ((i = 1; i <= 200; i++)); do
		if ((running >= 30)); then
			wait -n
			running=$((running - 1))
		fi
		# each script's status is kept too: a failure may say nothing
		{
			rc=0
			bash "$T/count.$MODE" "$i" 3>&- 2>"$T/count.err.$i" || rc=$?
			echo "$rc" >"$T/count.rc.$i"
		} &
		running=$((running + 1))
	done
	while ((running > 0)); do
		wait -n
		running=$((running - 1))
	done
	failed=$(grep -L -x 0 "$T"/count.rc.* | wc -l)
	# a failure shows which scripts failed, with what status, and what they said
	grep -H -v -x 0 "$T"/count.rc.* || true
	assert_equal "$failed: $(cat "$T"/count.err.*)" "0: "
	assert_equal "$(cat "$T/counter")" 200
}

# shellcheck disable=SC2030,SC2031 # bats' run sets output and lines for the test
scenario_waitfor_scope() {
	script waitfor-scope <<'EOF'
# names waitfor used for its own locals, as the caller's globals
n=10 list=L timeout=T deadline=D interval=I left=X wake=W now=N s=S i=I2
what=WH took=TK quiet=Q verbose=V listed=LS rc=R retry=RT
probe() {
	printf 'sees %s %s %s %s %s %s %s %s %s\n' "$n" "$list" "$timeout" "$deadline" \
		"$interval" "$rc" "$s" "$i" "$retry"
	n=$((n + 1))
	timeout=0 deadline=0
	((n >= 12))
}
waitfor -q 1m 1ms probe
printf 'after %s %s %s\n' "$n" "$timeout" "$deadline"
EOF
	cmd waitfor-scope
	run -0 --separate-stderr "${CMD[@]}"
	assert_equal "${lines[*]}" "sees 10 L T D I R S I2 RT sees 11 L 0 0 I R S I2 RT after 12 0 0"
	assert_equal "$stderr" ""
}

# bats test_tags=lockkind
# shellcheck disable=SC2030,SC2031 # bats' run sets output and lines for the test
@test "waitfor's locals do not shadow the variables of the function it retries" {
	both scenario_waitfor_scope
}

# shellcheck disable=SC2030,SC2031 # bats' run sets output and lines for the test
scenario_waitfor_zero() {
	script waitfor-zero <<'EOF'
count=0
bump() { count=$((count + 1)); return 3; }
for t in 0 0s 0ms 0m; do
	count=0
	rc=0; waitfor -q "$t" 5 bump || rc=$?
	printf '%s %s %s\n' "$t" "$rc" "$count"
done
waitfor -v 0 5 false
EOF
	cmd waitfor-zero
	run -1 --separate-stderr "${CMD[@]}"
	assert_equal "${lines[*]}" "0 3 1 0s 3 1 0ms 3 1 0m 3 1"
	assert_equal "$stderr" "waitfor: attempt 1 exited 1; out of time
waitfor: gave up after 0ms (1 attempt); last status 1"
}

# bats test_tags=lockkind
# shellcheck disable=SC2030,SC2031 # bats' run sets output and lines for the test
@test "waitfor with a TIMEOUT of 0 tries exactly once, as the applet does" {
	both scenario_waitfor_zero
	if "$LOCKBOX" --list | grep -qx waitfor; then
		run -1 --separate-stderr "$LOCKBOX" waitfor -v 0 5 false
		# shellcheck disable=SC2154 # set by bats' run
		assert_equal "$stderr" "waitfor: attempt 1 exited 1; out of time
waitfor: gave up after 0ms (1 attempt); last status 1"
	fi
}

# shellcheck disable=SC2030,SC2031 # bats' run sets output and lines for the test
scenario_trap_args() {
	rm -f "$T/log.$MODE"
	script trap-args-before <<'EOF'
trap 'printf "before %s|%s|%s|%s\n" "$#" "$1" "$2" "$*" >>"$T/log.$MODE"' EXIT
acquire_mutex "$F"
shift
EOF
	script trap-args-after <<'EOF'
acquire_slot "$F" 2
trap 'printf "after %s|%s|%s\n" "$#" "$1" "$*" >>"$T/log.$MODE"' EXIT
set -- x "y z"
EOF
	cmd trap-args-before
	run -0 --separate-stderr "${CMD[@]}" a "b c" d
	assert_equal "$stderr" ""
	cmd trap-args-after
	run -0 --separate-stderr "${CMD[@]}" a
	assert_equal "$stderr" ""
	assert_equal "$(cat "$T/log.$MODE")" "before 2|b c|d|b c d
after 2|x|x y z"
	run -0 "$LOCKBOX" slots "$F" check
	assert_output 0
}

# bats test_tags=lockkind
# shellcheck disable=SC2030,SC2031 # bats' run sets output and lines for the test
@test "the script's own EXIT trap keeps \$1, \$# and \$@ when the library runs it" {
	need_ofd	# the library locks the fd its shell opened: --fd
	both scenario_trap_args
}

# shellcheck disable=SC2030,SC2031 # bats' run sets output and lines for the test
scenario_one_key() {
	mkdir -p "$T/dir.$MODE/sub"
	ln -sfn "dir.$MODE" "$T/link.$MODE"
	script one-key <<'EOF'
cd "$T/dir.$MODE"
acquire_mutex x.lock
acquire_mutex ./x.lock
acquire_mutex "$T/link.$MODE/x.lock"
acquire_mutex sub/../x.lock
"$LOCKBOX" mutex x.lock check
release_mutex "$T/link.$MODE/sub/../x.lock"
"$LOCKBOX" mutex x.lock check
cd "$T"
acquire_slot "link.$MODE/s.lock" 2
printf 'slot %s\n' "$LOCKBOX_SLOT"
acquire_slot "$T/dir.$MODE/./s.lock" 2
printf 'slot %s\n' "$LOCKBOX_SLOT"
"$LOCKBOX" slots "dir.$MODE/s.lock" check
release_slot "dir.$MODE//s.lock"
"$LOCKBOX" slots "dir.$MODE/s.lock" check
EOF
	cmd one-key
	run -0 --separate-stderr "${CMD[@]}"
	assert_equal "$stderr" ""
	assert_equal "${lines[*]}" "1 0 slot 1 slot 1 1 0"
}

# bats test_tags=lockkind
# shellcheck disable=SC2030,SC2031 # bats' run sets output and lines for the test
@test "x.lock, ./x.lock and a path through a symlinked directory are one lock" {
	need_ofd	# the library locks the fd its shell opened: --fd
	both scenario_one_key
}

# shellcheck disable=SC2030,SC2031 # bats' run sets output and lines for the test
scenario_other_names() {
	mkdir -p "$T/dir.$MODE" "$T/moved.$MODE"
	# another process holds $F, for the script to release what it does not hold
	hold_script
	start_hold
	script other-names <<'EOF'
cd "$T/dir.$MODE"
acquire_mutex x.lock
ln x.lock "$T/hard.$MODE.lock"
# another name of a held file is the same lock: taken once, released
acquire_mutex "$T/hard.$MODE.lock"
"$LOCKBOX" mutex x.lock check
release_mutex "$T/hard.$MODE.lock"
printf 'released %s\n' "$?"
"$LOCKBOX" mutex x.lock check
# a held file moved to another directory, released by its new path
acquire_slot y.lock 2
mv "$T/dir.$MODE/y.lock" "$T/moved.$MODE/y.lock"
release_slot "$T/moved.$MODE/y.lock"
"$LOCKBOX" slots "$T/moved.$MODE/y.lock" check
# what this shell does not hold: nothing changes, 0
release_mutex "$F"
printf 'unheld %s\n' "$?"
"$LOCKBOX" mutex "$F" check
EOF
	cmd other-names
	run -0 --separate-stderr timeout 60 "${CMD[@]}"
	assert_equal "$stderr" ""
	assert_equal "${lines[*]}" "1 released 0 0 0 unheld 0 1"
}

# bats test_tags=lockkind
# shellcheck disable=SC2030,SC2031 # bats' run sets output and lines for the test
@test "a held file released by another of its names (a hard link, a moved file) is released" {
	need_ofd	# the library locks the fd its shell opened: --fd
	both scenario_other_names
}

# shellcheck disable=SC2030,SC2031 # bats' run sets output and lines for the test
scenario_held_slot_above() {
	script above <<'EOF'
acquire_slot "$F" 3
acquire_slot "$F" 3
printf 'slot %s\n' "$LOCKBOX_SLOT"
rc=0; acquire_slot "$F" 1 || rc=$?
printf 'smaller %s\n' "$rc"
rc=0; acquire_mutex "$F" || rc=$?
printf 'mutex %s\n' "$rc"
"$LOCKBOX" slots "$F" check
EOF
	cmd above
	spawn "$LOCKBOX" slots "$F" 2 sleep 600
	spawn "$LOCKBOX" slots "$F" 2 sleep 600
	wait_for held_is "$F" 2
	run -0 --separate-stderr "${CMD[@]}"
	assert_equal "${lines[*]}" "slot 3 smaller 125 mutex 125 3"
	assert_regex "$stderr" "^slots: $(re_quote "$F"): fd [0-9]+ holds slot 3 already, above MAX 1; release it first
mutex: $(re_quote "$F"): fd [0-9]+ holds slot 3 already, not the mutex's slot 1; release it first\$"
}

# bats test_tags=lockkind
# shellcheck disable=SC2030,SC2031 # bats' run sets output and lines for the test
@test "a slot held above a smaller MAX, or as a mutex, is refused, never taken twice" {
	need_ofd	# the library locks the fd its shell opened: --fd
	both scenario_held_slot_above
}

# bats test_tags=lockkind,wait
# shellcheck disable=SC2030,SC2031 # bats' run sets output and lines for the test
@test "sourced from dash or sh, the library says it needs bash and returns 125" {
	command -v dash >/dev/null || skip "no dash here"
	local lib sh
	lib=$("$LOCKBOX" --shell-lib)
	for sh in dash sh; do
		command -v "$sh" >/dev/null || continue
		# bash run as sh is bash: the library works there
		# shellcheck disable=SC2016 # expanded by the child shell
		if "$sh" -c '[ -n "${BASH_VERSION-}" ]'; then
			continue
		fi
		# shellcheck disable=SC2016 # expanded by the child shell
		run -0 --separate-stderr "$sh" -c '. "$1"; echo "status $?"' sh "$lib"
		assert_output "status 125"
		assert_stderr "lockbox.bash: needs bash 4.1 or later; this shell is not bash"
		# shellcheck disable=SC2016 # expanded by the child shell
		run -3 --separate-stderr "$sh" -c '. "$1" || exit 3; acquire_mutex "$2" || exit 0' sh "$lib" "$F"
		assert_output ""
		assert_stderr "lockbox.bash: needs bash 4.1 or later; this shell is not bash"
	done
}

# shellcheck disable=SC2030,SC2031 # bats' run sets output and lines for the test
scenario_acquire_wait() {
	script wait-kernel <<'EOF'
rc=0; acquire_mutex -w 300ms "$F" || rc=$?
printf 'short %s\n' "$rc"
printf '%s\n' "$$" >"$T/waiting.$MODE"
acquire_mutex -q -w 60s "$F"
printf 'got\n'
"$LOCKBOX" mutex "$F" list | sed -n 2p
rc=0; acquire_slot -w 1x "$F.s" 2 || rc=$?
printf 'bad %s\n' "$rc"
EOF
	cmd wait-kernel
	rm -f "$T/waiting.$MODE"
	spawn "$LOCKBOX" mutex "$F" sleep 600
	local holder=$SPAWN_PID
	wait_for held_is "$F" 1
	spawn "${CMD[@]}"
	local waiter=$SPAWN_PID out=$SPAWN_OUT err=$SPAWN_ERR
	wait_for test -e "$T/waiting.$MODE"
	# one waiter, blocked in the kernel's lock queue, not trying again and again
	wait_for waiting_on "$F" 1
	stop_pid "$holder"
	reap "$waiter"
	assert_equal "$REAP_STATUS" 0
	assert_equal "$(sed -n 1,2p "$out")" "short 75
got"
	assert_regex "$(sed -n 3p "$out")" "^1 +$waiter +$AGE_RE +$(re_quote "wait-kernel.$MODE")\$"
	assert_equal "$(sed -n 4p "$out")" "bad 125"
	assert_regex "$(sed -n 1p "$err")" "^mutex: $(re_quote "$F"): timed out after 300ms; held by PID $holder \\(sleep, $AGE_RE\\)\$"
	assert_equal "$(sed -n '2,$p' "$err")" "slots: invalid duration '1x': expected a number of seconds, or with units (ms s sec m min h hr d) such as 90s, 10min or 1h30m
Try 'lockbox slots --help'."
}

# bats test_tags=lockkind,wait
# shellcheck disable=SC2030,SC2031 # bats' run sets output and lines for the test
@test "acquire_mutex -w DUR waits in the kernel, then takes the lock or gives up with 75" {
	need_ofd	# the library locks the fd its shell opened: --fd
	both scenario_acquire_wait
}

# shellcheck disable=SC2030,SC2031 # bats' run sets output and lines for the test
scenario_swapped() {
	# the race between the library's check and the lock, played by the
	# script: once this shell has an fd open on F (the library opened it),
	# another file takes F's place, before the lock is taken (the bash
	# functions' path: with the builtin, the open and the lock are one
	# call, and no command of the script runs between them)
	script swapped <<'EOF'
set -T
# shellcheck disable=SC2016 # expanded when the trap runs
trap 'if [[ -e $SWAP_FROM ]]; then for _fd in "/proc/$BASHPID/fd/"*; do if [[ $_fd -ef $F ]]; then mv -fT -- "$SWAP_FROM" "$F" || :; break; fi; done; fi' DEBUG
rc=0; acquire_mutex "$F" || rc=$?
trap - DEBUG
printf 'swapped %s\n' "$rc"
EOF
	cmd swapped
	rm -f "$F"
	printf 'precious\n' >"$T/target.$MODE"
	# first another regular file, then a symlink, takes F's place
	: >"$T/other.$MODE"
	ln -sfn "$T/target.$MODE" "$T/symlink.$MODE"
	if in_shell; then
		SWAP_FROM=$T/other.$MODE run -0 --separate-stderr "${CMD[@]}"
		# taken, on the file that F named: the trap's first chance
		# to swap comes after it (before `trap - DEBUG`)
		assert_output "swapped 0"
		assert_equal "$stderr" ""
		return 0
	fi
	# the file at F now is opened again, and locked
	SWAP_FROM=$T/other.$MODE run -0 --separate-stderr "${CMD[@]}"
	assert_output "swapped 0"
	assert_equal "$stderr" ""
	assert [ ! -e "$T/other.$MODE" ]
	SWAP_FROM=$T/symlink.$MODE run -0 --separate-stderr "${CMD[@]}"
	assert_output "swapped 125"
	assert_equal "$stderr" "mutex: $F: is a symbolic link; refusing to follow it"
	assert_equal "$(cat "$T/target.$MODE")" precious
	assert [ ! -e "$T/symlink.$MODE" ]
}

# bats test_tags=lockkind,wait
# shellcheck disable=SC2030,SC2031 # bats' run sets output and lines for the test
@test "a lock file swapped between the library's check and its open is refused (--path), or cannot be" {
	need_ofd	# the library locks the fd its shell opened: --fd
	both scenario_swapped
}

# shellcheck disable=SC2030,SC2031 # bats' run sets output and lines for the test
scenario_replaced_wait() {
	script replaced <<'EOF'
printf '%s\n' "$$" >"$T/waiting.$MODE"
rc=0; acquire_mutex -w 120 "$F" || rc=$?
printf 'took %s\n' "$rc"
"$LOCKBOX" mutex "$F" check
stat -c %i "$F"
EOF
	cmd replaced
	rm -f "$T/waiting.$MODE"
	spawn "$LOCKBOX" mutex "$F" sleep 600
	local first=$SPAWN_PID second
	wait_for held_is "$F" 1
	spawn "${CMD[@]}"
	local waiter=$SPAWN_PID out=$SPAWN_OUT err=$SPAWN_ERR
	wait_for test -e "$T/waiting.$MODE"
	wait_for waiting_on "$F" 1
	# another lock file, held by another, takes F's place while the script waits
	spawn "$LOCKBOX" mutex "$T/new.$MODE" sleep 600
	second=$SPAWN_PID
	wait_for held_is "$T/new.$MODE" 1
	mv -f "$T/new.$MODE" "$F"
	# the first holder ends: the file it held is no longer at F, and the
	# script waits for the one there now, for the rest of its -w
	stop_pid "$first"
	wait_for waiting_on "$F" 1
	kill -0 "$waiter"
	stop_pid "$second"
	reap "$waiter"
	assert_equal "$REAP_STATUS" 0
	assert_equal "$(cat "$out")" "took 0
1
$(stat -c %i "$F")"
	assert_equal "$(cat "$err")" ""
}

# bats test_tags=lockkind,wait
# shellcheck disable=SC2030 # bats' run sets output and lines for the test
@test "acquire_mutex -w: a lock file replaced at its path during the wait is opened again and waited for" {
	need_ofd	# the library locks the fd its shell opened: --fd
	both scenario_replaced_wait
}

# shellcheck disable=SC2030,SC2031 # bats' run sets output and lines for the test
scenario_options() {
	script options <<'EOF'
cd "$T/opts.$MODE"
try() { local rc=0; "$@" || rc=$?; printf '%s %s\n' "$*" "$rc"; }
# mutex(1)'s spellings: the default file, or FILE
try acquire_mutex -v
try acquire_mutex --wait=5s
try acquire_mutex --quiet --verbose a.lock
try acquire_mutex -qw 1s b.lock
try acquire_mutex -xvn c.lock
try mutex acquire --timeout 1 -q d.lock
try acquire_slot -qvw1s e.lock 2
# anything else: one line, 125, nothing made
try acquire_mutex --bogus
try acquire_mutex -z f.lock
try acquire_mutex -E 0 g.lock
try acquire_mutex --quiet=1 h.lock
try acquire_slot -qk i.lock 2
try release_mutex -v
try release_slot --all
try acquire_mutex -w
# a FILE that starts with -, after --
try acquire_mutex -- -v
try release_mutex -- -v
ls
# an option is the call's own: a plain acquire after an -s one is exclusive
acquire_mutex -s s.lock
acquire_mutex x.lock
"$LOCKBOX" mutex x.lock list | grep -c 'shared:' || :
EOF
	cmd options
	mkdir "$T/opts.$MODE"
	LOCKBOX_MUTEX_FILE=$T/opts.$MODE/default.lock run -0 --separate-stderr "${CMD[@]}"
	assert_output "acquire_mutex -v 0
acquire_mutex --wait=5s 0
acquire_mutex --quiet --verbose a.lock 0
acquire_mutex -qw 1s b.lock 0
acquire_mutex -xvn c.lock 0
mutex acquire --timeout 1 -q d.lock 0
acquire_slot -qvw1s e.lock 2 0
acquire_mutex --bogus 125
acquire_mutex -z f.lock 125
acquire_mutex -E 0 g.lock 125
acquire_mutex --quiet=1 h.lock 125
acquire_slot -qk i.lock 2 125
release_mutex -v 125
release_slot --all 125
acquire_mutex -w 125
acquire_mutex -- -v 0
release_mutex -- -v 0
-v
a.lock
b.lock
c.lock
d.lock
default.lock
e.lock
0"
	assert_equal "$stderr" "mutex: $T/opts.$MODE/default.lock: took slot 1 of 1
mutex: a.lock: took slot 1 of 1
mutex: c.lock: took slot 1 of 1
slots: e.lock: took slot 1 of 2
acquire_mutex: invalid option '--bogus'; usage: acquire_mutex [-nqsvx] [-w DUR] [FILE]
acquire_mutex: invalid option '-z'; usage: acquire_mutex [-nqsvx] [-w DUR] [FILE]
acquire_mutex: invalid option '-E'; usage: acquire_mutex [-nqsvx] [-w DUR] [FILE]
acquire_mutex: invalid option '--quiet=1'; usage: acquire_mutex [-nqsvx] [-w DUR] [FILE]
acquire_slot: invalid option '-k'; usage: acquire_slot [-nqv] [-w DUR] FILE MAX
release_mutex: invalid option '-v'; usage: release_mutex [FILE]
release_slot: invalid option '--all'; usage: release_slot [FILE]
acquire_mutex: option '-w' needs an argument"
}

# bats test_tags=lockkind,wait
# shellcheck disable=SC2030 # bats' run sets output and lines for the test
@test "the library takes mutex(1)'s spellings of its options, and refuses any other with one line and 125, making nothing" {
	need_ofd	# the library locks the fd its shell opened: --fd
	both scenario_options
}

# shellcheck disable=SC2030,SC2031 # bats' run sets output and lines for the test
scenario_lost_locks() {
	script lost <<'EOF'
# in $(...): it ends there, and is said once
out=$(acquire_mutex "$F.c"; printf 'in'); printf '%s\n' "$out"
# in a pipeline's part: said too (this subshell's own first time)
acquire_mutex "$F.p" | cat
# in a ( ... ) that runs under it, on the script's stdout: nothing said
( acquire_mutex "$F.s"; "$LOCKBOX" mutex "$F.s" check )
# a helper's own acquire and release of a lock its caller took
helper() { acquire_mutex "$F"; release_mutex "$F"; }
acquire_mutex "$F"
helper
"$LOCKBOX" mutex "$F" check
acquire_mutex "$F"
helper
# a helper that releases what its caller took, without taking it again: nothing said
done_with() { release_mutex "$F.d"; }
acquire_mutex "$F.d"
done_with
"$LOCKBOX" mutex "$F.d" check
EOF
	cmd lost
	run -0 --separate-stderr "${CMD[@]}"
	assert_output "in
1
0
0"
	assert_equal "$stderr" "acquire_mutex: $F.c: taken in a subshell of \$(...) or a pipeline, which releases it as it ends: the script does not hold it
acquire_mutex: $F.p: taken in a subshell of \$(...) or a pipeline, which releases it as it ends: the script does not hold it
release_mutex: $F: released in a function that took it again, which changed nothing: the caller that took it first holds it no more"
}

# bats test_tags=lockkind
# shellcheck disable=SC2030 # bats' run sets output and lines for the test
@test "a lock taken in \$(...) or a pipeline, or released by a helper under its caller, is said once on stderr" {
	need_ofd	# the library locks the fd its shell opened: --fd
	both scenario_lost_locks
}

# bats test_tags=lockkind,privilege,wait
# shellcheck disable=SC2030,SC2031 # bats' run sets output and lines for the test
@test "a library holder is named for its script, not bash, and never with its arguments" {
	need_ofd	# the library locks the fd its shell opened: --fd
	local lib form n=0
	lib=$("$LOCKBOX" --shell-lib)
	mkdir "$T/bin"
	{
		printf '%s\n' '#!/usr/bin/env bash' 'set -euo pipefail'
		printf '. %q\n' "$lib"
		# shellcheck disable=SC2016 # expanded by the script
		printf '%s\n' 'acquire_mutex "$1"' '"$LOCKBOX" mutex "$1" list | sed -n 2p' \
			'( acquire_mutex "$1.sub"; "$LOCKBOX" mutex "$1.sub" list | sed -n 2p )' \
			'if [[ -n ${3-} ]]; then read -r -t 600 _ <>"$3" || :; fi'
	} >"$T/bin/nightly-backup.sh"
	chmod +x "$T/bin/nightly-backup.sh"
	# run by its path (#!), by bash with options (-o takes a word), after --
	for form in "" "bash" "bash -euo pipefail" "bash --norc -O extglob --"; do
		n=$((n + 1))
		# shellcheck disable=SC2086 # split into words on purpose
		run -0 --separate-stderr $form "$T/bin/nightly-backup.sh" "$F.$n" hunter2
		assert_regex "${lines[0]}" "^1 +[0-9]+ +$AGE_RE +nightly-backup\\.sh\$"
		assert_regex "${lines[1]}" "^1 +[0-9]+ +$AGE_RE +nightly-backup\\.sh\$"
		assert_equal "$stderr" ""
		run -1 grep -c hunter2 "$F.$n" "$F.$n.sub"
	done
	# the busy message names it
	mkfifo "$T/fifo"
	spawn bash "$T/bin/nightly-backup.sh" "$F.busy" hunter2 "$T/fifo"
	wait_for held_is "$F.busy" 1
	run -75 --separate-stderr "$LOCKBOX" mutex "$F.busy" true
	assert_stderr_regex "^mutex: $(re_quote "$F.busy"): held by PID $SPAWN_PID \\(nightly-backup\\.sh, $AGE_RE\\)\$"
	stop_pid "$SPAWN_PID"
	# a command string (bash -c) is no script: the shell's own name
	# shellcheck disable=SC2016 # expanded by the child shell
	run -0 --separate-stderr bash -c '. "$1"; acquire_mutex "$2"; "$LOCKBOX" mutex "$2" list | sed -n 2p' \
		sh "$lib" "$F.c"
	assert_regex "$output" "^1 +[0-9]+ +$AGE_RE +bash\$"
}

# shellcheck disable=SC2031 # bats' run sets output and lines for the test
scenario_mutex_program_forms() {
	script forms <<'EOF'
mutex "$F" check
acquire_mutex "$F"
mutex "$F" list | awk -v me="$$" 'NR == 2 { print ($2 == me ? "mine" : "other") }'
mutex --json "$F" check
mutex -w 5 "$F.b" sh -c 'echo "ran $LOCKBOX_SLOT"'
mutex "$F.b" -- echo plain
rc=0; mutex -q "$F" true || rc=$?
printf 'busy %s\n' "$rc"
exec {fd}<>"$F.b"
mutex acquire --fd "$fd"
mutex "$F.b" check
mutex release --fd "$fd"
mutex "$F.b" check
waitfor 1 1 mutex "$F.b" check
EOF
	cmd forms
	run -0 --separate-stderr "${CMD[@]}"
	assert_equal "${lines[*]}" "0 mine {\"file\":\"$F\",\"held\":1} ran 1 plain busy 75 1 1 0 0"
	assert_equal "$stderr" ""
}

# bats test_tags=lockkind,wait
# shellcheck disable=SC2030 # bats' run sets output and lines for the test
@test "mutex FILE list|check, mutex [-w DUR] FILE COMMAND and acquire --fd in a script are the program's" {
	need_ofd	# the library locks the fd its shell opened: --fd
	both scenario_mutex_program_forms
}

# bats test_tags=lockkind
# shellcheck disable=SC2030,SC2031 # bats' run sets output and lines for the test
@test "inherited through set -a or export -f, or with a guard in the environment, the library still locks" {
	need_ofd	# the library locks the fd its shell opened: --fd
	local lib
	lib=$("$LOCKBOX" --shell-lib)
	# a job that sources the library, and one that only calls what it inherited
	{
		printf '%s\n' 'set -euo pipefail'
		printf '. %q\n' "$lib"
		# shellcheck disable=SC2016 # expanded by the script
		printf '%s\n' 'acquire_mutex "$1" || exit' 'echo critical'
	} >"$T/job"
	# shellcheck disable=SC2016 # expanded by the script
	printf '%s\n' 'set -euo pipefail' "trap 'echo own trap' EXIT" 'acquire_mutex "$1" || exit' \
		'echo critical' >"$T/job-inherits"
	spawn "$LOCKBOX" mutex "$F" sleep 600
	local holder=$SPAWN_PID busy
	wait_for held_is "$F" 1
	busy="^mutex: $(re_quote "$F"): held by PID $holder \\(sleep, $AGE_RE\\)\$"
	# set -a: nothing of the library is exported, and set -a still works
	# for the script's own variables
	# shellcheck disable=SC2016 # expanded by the child shell
	run -75 --separate-stderr bash -c 'set -euo pipefail; set -a; . "$1"; acquire_mutex "$2"
		waitfor 1 1 true; trap : EXIT; mine=1
		env | grep -E "_lockbox|^BASH_FUNC_(acquire_|release_|mutex|waitfor|trap)" || :
		bash -c "echo \$mine"
		bash "$3" "$4"' sh "$lib" "$F.parent" "$T/job" "$F"
	assert_output 1
	assert_stderr_regex "$busy"
	# export -f of every function: the job that sources it locks; the one
	# that does not refuses with 125 (its EXIT trap still set by the
	# builtin), or with builtins there is nothing to inherit (127)
	# shellcheck disable=SC2016 # expanded by the child shell
	run -75 --separate-stderr bash -c 'set -euo pipefail; . "$1"; mapfile -t f < <(compgen -A function)
		export -f "${f[@]}"; bash "$2" "$3"' sh "$lib" "$T/job" "$F"
	assert_output ""
	assert_stderr_regex "$busy"
	local want=125 said="acquire_mutex: lockbox.bash was not sourced in this shell (a function inherited from the environment?); source it"
	if in_shell; then
		want=127 said="$T/job-inherits: line 3: acquire_mutex: command not found"
	fi
	# shellcheck disable=SC2016 # expanded by the child shell
	run "-$want" --separate-stderr bash -c 'set -euo pipefail; . "$1"; mapfile -t f < <(compgen -A function)
		export -f "${f[@]}"; bash "$2" "$3"' sh "$lib" "$T/job-inherits" "$F"
	assert_output "own trap"
	assert_stderr "$said"
	# only a guard variable in the environment: no skipped set-up
	run -75 --separate-stderr env _lockbox_loaded=1 _lockbox_guard=1 bash "$T/job" "$F"
	assert_output ""
	assert_stderr_regex "$busy"
	run -0 --separate-stderr env _lockbox_loaded=1 _lockbox_guard=1 bash "$T/job" "$F.free"
	assert_output critical
	assert_stderr ""
}


# bats test_tags=lockkind
# shellcheck disable=SC2030,SC2031 # bats' run sets output and lines for the test
@test "the builtin is loaded when the build has one, not with LOCKBOX_BUILTIN=0; one that does not load leaves the binary" {
	local lib want=0
	lib=$("$LOCKBOX" --shell-lib)
	if [[ $LIB_PATH == builtin && -n $(builtin_so) ]]; then
		want=1
	fi
	# shellcheck disable=SC2016 # expanded by the child shell
	run -0 --separate-stderr bash -c '. "$1"; printf "%s\n" "$_lockbox_inshell"' sh "$lib"
	assert_output "$want"
	assert_stderr ""
	# shellcheck disable=SC2016 # expanded by the child shell
	run -0 --separate-stderr env LOCKBOX_BUILTIN=0 bash -c '. "$1"; printf "%s\n" "$_lockbox_inshell"' sh "$lib"
	assert_output 0
	# a builtin bash cannot load (here not a shared object at all): the
	# binary takes the locks, without a word
	printf 'junk\n' >"$T/junk.so"
	sed "s|^_lockbox_builtin_so=.*|_lockbox_builtin_so='$T/junk.so'|" "$lib" >"$T/lib.bash"
	# shellcheck disable=SC2016 # expanded by the child shell
	run -0 --separate-stderr bash -c '. "$1"; printf "%s\n" "$_lockbox_inshell"' sh "$T/lib.bash"
	assert_output 0
	assert_stderr ""
	ofd_build || return 0	# the library locks the fd its shell opened: --fd
	# shellcheck disable=SC2016 # expanded by the child shell
	run -0 --separate-stderr bash -c '. "$1"; acquire_mutex "$2"; "$LOCKBOX" mutex "$2" check' \
		sh "$T/lib.bash" "$F"
	assert_output 1
	assert_stderr ""
}

# process_starts TRACE BEGIN END: how many processes the traced shell
# started (fork, vfork, execve, or a clone that is not a thread) between
# its opens of BEGIN and END; "markers N" (2 when both were seen)
process_starts() {
	awk -v b="\"$2\"" -v e="\"$3\"" '
		index($0, b) { on = 1; seen++ }
		index($0, e) { on = 0; seen++ }
		on && /[ (](clone3?|fork|vfork|execve)\(/ && !/CLONE_THREAD/ { n++; print > "/dev/stderr" }
		END { printf "markers %d %d\n", seen, n }' "$1"
}

# bats test_tags=lockkind,wait
# shellcheck disable=SC2030,SC2031 # bats' run sets output and lines for the test
@test "with the builtin, acquire, release, mutex acquire|release, slots, -w and waitfor start no process" {
	need_builtin
	need_ofd	# the library locks the fd its shell opened: --fd
	command -v strace >/dev/null || skip "needs strace"
	MODE=strict
	export MODE F T
	# a holder, so that -w waits and waitfor tries again (and sleeps)
	spawn "$LOCKBOX" mutex "$F.busy" sleep 600
	wait_for held_is "$F.busy" 1
	# an EXIT trap the library's wrapper did not see: read back when it arms
	script zero <<'EOF'
builtin trap 'printf "own exit trap\n"' EXIT
: >"$T/begin"
acquire_mutex "$F"
release_mutex "$F"
acquire_mutex "$F.new"
release_mutex
mutex acquire "$F"
mutex release "$F"
acquire_slot "$F.slots" 3
printf 'slot %s\n' "$LOCKBOX_SLOT"
release_slot "$F.slots"
rc=0; acquire_mutex -q -w 200ms "$F.busy" || rc=$?
printf 'wait %s\n' "$rc"
rc=0; waitfor -q 300ms 20ms acquire_mutex -q "$F.busy" || rc=$?
printf 'waitfor %s\n' "$rc"
waitfor 1m 20ms acquire_slot "$F.slots" 1
trap 'printf "exit trap after\n"' EXIT
: >"$T/end"
EOF
	cmd zero
	run -0 --separate-stderr strace -f -qq -o "$T/trace" \
		-e trace=openat,clone,clone3,fork,vfork,execve "${CMD[@]}"
	assert_equal "${lines[*]}" "slot 1 wait 75 waitfor 75 exit trap after"
	assert_stderr ""
	run -0 --separate-stderr process_starts "$T/trace" "$T/begin" "$T/end"
	# shellcheck disable=SC2154 # set by bats' run
	assert_equal "$output $stderr" "markers 2 0 "
}

# bats test_tags=lockkind,wait
# shellcheck disable=SC2030,SC2031 # bats' run sets output and lines for the test
@test "with the builtin, SIGTERM and SIGINT end a -w wait or waitfor's sleep at once: the trap runs, the lock is not taken" {
	need_builtin
	need_ofd	# the library locks the fd its shell opened: --fd
	MODE=strict
	export MODE F T
	spawn "$LOCKBOX" mutex "$F" sleep 600
	local holder=$SPAWN_PID start
	wait_for held_is "$F" 1
	script sig <<'EOF'
trap 'printf "trapped TERM\n"' TERM
trap 'printf "trapped INT\n"' INT
rc=0; acquire_mutex -w 10m "$F" || rc=$?
threads=("/proc/$BASHPID/task/"*)
printf 'wait %s, threads %s\n' "$rc" "${#threads[@]}"
rc=0; waitfor -v 10m 10m acquire_mutex -q "$F" || rc=$?
printf 'waitfor %s\n' "$rc"
EOF
	cmd sig
	# bash ignores SIGINT in a job started in the background: not this one
	spawn env --default-signal=INT "${CMD[@]}"
	local pid=$SPAWN_PID out=$SPAWN_OUT err=$SPAWN_ERR
	# queued: the head of the queue holds a ticket byte
	wait_for waiting_on "$F" 1
	start=$SECONDS
	kill -TERM "$pid"
	# waitfor has tried and is asleep in the builtin (the only place it sleeps)
	wait_for grep -q 'exited 75; next in ' "$err"
	wait_for proc_state_is "$pid" S
	kill -INT "$pid"
	# bounded: a wait that took no notice would last 10 minutes
	wait_for proc_done "$pid"
	reap "$pid"
	assert_equal "$REAP_STATUS" 0
	assert [ $((SECONDS - start)) -lt 20 ]
	assert_equal "$(cat "$out")" "trapped TERM
wait 143, threads 1
trapped INT
waitfor 130"
	# the holder's lock stands; nobody else's was taken
	run -0 "$LOCKBOX" mutex "$F" list
	assert_regex "${lines[1]}" "^1 +$holder "
	# without a trap of its own: the signal ends the script, the EXIT
	# trap releasing what it held first
	script sig-exit <<'EOF'
acquire_mutex "$F.other"
acquire_mutex -w 10m "$F"
EOF
	cmd sig-exit
	spawn "${CMD[@]}"
	pid=$SPAWN_PID
	wait_for waiting_on "$F" 1
	start=$SECONDS
	kill -TERM "$pid"
	wait_for proc_done "$pid"
	reap "$pid"
	assert_equal "$REAP_STATUS" 143
	assert [ $((SECONDS - start)) -lt 20 ]
	run -0 "$LOCKBOX" mutex "$F.other" check
	assert_output 0
}

# proc_state_is PID STATE: process PID is in STATE (R, S, D, T...)
proc_state_is() {
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 2
	stat=${stat##*) }
	[[ ${stat%% *} == "$2" ]]
}

# proc_done PID: our child PID has ended (a zombie, or reaped already by
# this shell, which keeps its status for wait)
proc_done() {
	local rc=0
	proc_state_is "$1" Z || rc=$?
	# 2: no /proc entry left
	((rc != 1))
}

# bats test_tags=lockkind
# shellcheck disable=SC2030,SC2031 # bats' run sets output and lines for the test
@test "with the builtin: a function of its name is not called, enable -d unloads the library, unset -f keeps the release" {
	need_builtin
	need_ofd	# the library locks the fd its shell opened: --fd
	MODE=strict
	export MODE F T
	# enable -d of one of its builtins unloads the library: what the shell
	# holds is let go, its own EXIT trap put back; sourced again, it loads
	script unload <<'EOF'
_lockbox_builtin() { printf 'a function called\n'; }
acquire_mutex "$F"
release_mutex "$F"
"$LOCKBOX" mutex "$F" check
acquire_mutex "$F"
acquire_slot "$F.s" 2
trap 'printf "own trap %s\n" "$?"' EXIT
enable -d _lockbox_builtin
printf 'inshell %s\n' "$_lockbox_inshell"
"$LOCKBOX" mutex "$F" check
"$LOCKBOX" slots "$F.s" check
builtin trap -p EXIT
. "$("$LOCKBOX" --shell-lib)"
printf 'inshell %s\n' "$_lockbox_inshell"
acquire_slot "$F.s" 2
printf 'slot %s\n' "$LOCKBOX_SLOT"
"$LOCKBOX" slots "$F.s" list | awk -v me="$$" 'NR == 2 { print ($2 == me ? "mine" : "other") }'
trap -p EXIT
exit 4
EOF
	cmd unload
	run -4 --separate-stderr "${CMD[@]}"
	local own="trap -- 'printf \"own trap %s\\n\" \"\$?\"' EXIT"
	assert_equal "${lines[*]}" "0 inshell 0 0 0 $own inshell 1 slot 1 mine $own own trap 4"
	assert_stderr ""
	run -0 "$LOCKBOX" slots "$F.s" check
	assert_output 0
	# the functions unset while a lock is held: the EXIT trap releases it,
	# although a background child has the fd
	script unset <<'EOF'
acquire_mutex "$F"
sleep 600 >/dev/null 2>&1 3>&- &
printf '%s\n' "$!" >"$T/child"
unset -f acquire_mutex release_mutex mutex acquire_slot release_slot waitfor trap
"$LOCKBOX" mutex "$F" check
EOF
	cmd unset
	run -0 --separate-stderr "${CMD[@]}"
	track_pid "$(cat "$T/child")"
	assert_output 1
	assert_stderr ""
	run -0 "$LOCKBOX" mutex "$F" check
	assert_output 0
}

# bats test_tags=lockkind
# shellcheck disable=SC2030,SC2031 # bats' run sets output and lines for the test
@test "with the builtin: sourcing defines no function, and builtin trap and command trap keep the release" {
	need_builtin
	need_ofd	# the library locks the fd its shell opened: --fd
	MODE=strict
	export MODE F T
	script builtin-trap <<'EOF'
n=$(compgen -A function | grep -c -E '^(_lockbox_|acquire_|release_|mutex$|waitfor$|trap$)' || :)
printf '%s\n' "$n"
acquire_mutex "$F"
sleep 600 >/dev/null 2>&1 3>&- &
printf '%s\n' "$!" >"$T/child"
builtin trap 'printf "mine %s\n" "$?"' EXIT
command trap -p EXIT
exit 3
EOF
	cmd builtin-trap
	run -3 --separate-stderr "${CMD[@]}"
	track_pid "$(cat "$T/child")"
	assert_equal "${lines[*]}" "0 trap -- 'printf \"mine %s\\n\" \"\$?\"' EXIT mine 3"
	assert_stderr ""
	# released although the background sleep still has the fd
	run -0 "$LOCKBOX" mutex "$F" check
	assert_output 0
}

# bats test_tags=lockkind,wait
# shellcheck disable=SC2030,SC2031 # bats' run sets output and lines for the test
@test "thousands of cycles leave the shell's fds, threads and memory where they were" {
	need_ofd	# the library locks the fd its shell opened: --fd
	MODE=strict
	export MODE F T
	spawn "$LOCKBOX" mutex "$F.busy" sleep 600
	wait_for held_is "$F.busy" 1
	# the binary's run (the fallback, forced or for want of a builtin: a
	# static build) is a process a cycle: fewer cycles there
	local n=2000
	if ! in_shell; then
		n=100
	fi
	script cycles <<'EOF'
snap() {
	local fds=("/proc/$BASHPID/fd/"*) tasks=("/proc/$BASHPID/task/"*) k v rss=
	while read -r k v _; do
		if [[ $k == VmRSS: ]]; then
			rss=$v
		fi
	done <"/proc/$BASHPID/status"
	# what each fd is open on (all but the glob's own), for a failure to show
	local f open=
	for f in "${fds[@]}"; do
		if [[ -e $f ]]; then
			open+=" ${f##*/}:$(readlink "$f")"
		fi
	done
	printf '%s %s %s%s\n' "${#fds[@]}" "${#tasks[@]}" "$rss" "$open"
}
cycles() {
	local i
	for ((i = 0; i < $1; i++)); do
		acquire_mutex "$F"
		release_mutex "$F"
		acquire_slot "$F.s" 2
		release_slot "$F.s"
		if ((i % 50 == 0)); then
			acquire_mutex -q -w 1ms "$F.busy" || :
		fi
	done
}
cycles "$1"
snap
cycles "$1"
snap
cycles "$1"
snap
cycles "$1"
snap
EOF
	cmd cycles
	run -0 --separate-stderr "${CMD[@]}" "$n"
	assert_stderr ""
	local a b c d
	read -ra a <<<"${lines[0]}"
	read -ra b <<<"${lines[1]}"
	read -ra c <<<"${lines[2]}"
	read -ra d <<<"${lines[3]}"
	# the same fds (stdio and the script's), one thread
	if [[ "${b[0]} ${b[1]} ${c[0]} ${c[1]} ${d[0]} ${d[1]}" != "${a[0]} 1 ${a[0]} 1 ${a[0]} 1" ]]; then
		fail "fds or threads changed (count, threads, kB, fds):$(printf '\n%s' "${lines[@]}")"
	fi
	# memory: settled after the first round. A leak grows it round after
	# round; the heap may grow once on a busy host (a longer lock table
	# read once), and stays (a bash with a sanitizer's runtime keeps freed
	# memory aside for a while: not a measure there)
	if [[ ! -d $T/asan-bin ]] && ((c[2] - b[2] >= 64 && d[2] - c[2] >= 64)); then
		fail "memory grew round after round: ${a[2]} ${b[2]} ${c[2]} ${d[2]} kB"
	fi
}

# bats test_tags=lockkind
# shellcheck disable=SC2030,SC2031 # bats' run sets output and lines for the test
@test "with stdin, stdout and stderr closed, a busy lock's message never lands in the lock file" {
	need_ofd	# the library locks the fd its shell opened: --fd
	MODE=strict
	export MODE F T
	spawn "$LOCKBOX" mutex "$F" sleep 600
	wait_for held_is "$F" 1
	script closed <<'EOF'
exec 0<&- 1>&- 2>&-
rc=0; acquire_mutex "$F" || rc=$?
acquire_slot "$F.s" 2
printf '%s %s\n' "$rc" "$LOCKBOX_SLOT" >"$T/closed.out"
EOF
	cmd closed
	run -0 "${CMD[@]}"
	assert_equal "$(cat "$T/closed.out")" "75 1"
	run -1 grep -c 'held by' "$F" "$F.s"
	run -0 "$LOCKBOX" mutex "$F" list
	assert_regex "${lines[1]}" "^1 +$SPAWN_PID +$AGE_RE +sleep\$"
}
