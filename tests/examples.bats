#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# The systemd units and the cron file of examples/: lockbox-systemd(7)
# prints them as shipped, systemd-analyze verify accepts the units, and
# the cron lines run under cron's PATH against an installed lockbox.

load test_helper
# bats file_tags=packaging

setup() {
	lockbox_setup
	SRC=${LOCKBOX_SRCDIR:-$BATS_TEST_DIRNAME/..}
	# tools/deb-check: the installed copies
	EX=${LOCKBOX_EXAMPLES:-$SRC/examples}
}

# the text of a man page's literal blocks, unescaped
man_literals() {
	sed -n '/^\.Bd -literal/,/^\.Ed/{/^\.Bd/d;/^\.Ed/d;s/^\\&//;s/\\e/\\/g;p;}' "$1"
}

@test "examples: lockbox-systemd(7) prints each unit as shipped" {
	local f lits line
	lits=$(man_literals "$SRC/man/lockbox-systemd.7.in")
	for f in "$EX"/*.service "$EX"/*.timer; do
		while IFS= read -r line; do
			# the units' comments are the man page's prose
			[[ -z $line || $line == '#'* ]] && continue
			if ! grep -qxF -- "$line" <<<"$lits"; then
				echo "${f##*/}: not in lockbox-systemd(7): $line"
				return 1
			fi
		done <"$f"
	done
}

# bats test_tags=lockkind
@test "examples: each line of the cron file has a user and names its programs by path" {
	local line n=0
	while IFS= read -r line; do
		[[ -z $line || $line == '#'* ]] && continue
		[[ $line =~ ^[A-Z]+= ]] && continue
		# five time fields, root, then /usr/bin/APPLET: cron's PATH needs none
		assert_regex "$line" '^([0-9*/,-]+ ){5}root /usr/bin/(slots|mutex|waitfor|adaptive) '
		n=$((n + 1))
	done <"$EX/lockbox.cron"
	assert_equal "$n" 4
}

# bats test_tags=lockkind
@test "examples: systemd-analyze verify accepts the units" {
	command -v systemd-analyze >/dev/null || skip "no systemd-analyze"
	local f bin=/usr/bin
	mkdir "$T/units"
	# with lockbox installed, as printed; else with the build's binary
	if [[ ! -x /usr/bin/lockbox ]]; then
		bin=$T/bin
		mkdir "$bin"
		for f in lockbox slots mutex waitfor adaptive; do
			ln -s "$LOCKBOX" "$bin/$f"
		done
	fi
	for f in "$EX"/*.service "$EX"/*.timer; do
		sed -E "s#/usr/bin/(lockbox|slots|mutex|waitfor|adaptive) #$bin/\\1 #" "$f" >"$T/units/${f##*/}"
	done
	cd "$T/units"
	# it reports bad lines and still exits 0: no output is the test
	run systemd-analyze verify --man=no ./*.service ./*.timer
	assert_success
	assert_output ''
	grep -q '^SuccessExitStatus=75$' lockbox-example-backup.service
	grep -q '^Persistent=true$' lockbox-example-sync.timer
}

# bats test_tags=lockkind,privilege
@test "examples: the cron lines run as printed under cron's PATH" {
	# the installed package's (tools/deb-check): a build tree's lockbox is
	# not what these lines run, and a suite beside the package's install
	# must not take it for its own
	[[ ${LOCKBOX-} == /usr/bin/lockbox && -x /usr/bin/lockbox && -L /usr/bin/slots ]] ||
		skip "tests the installed package: LOCKBOX=/usr/bin/lockbox"
	local line cmd n=0 made=() p
	# the files these lines make, removed after unless they were there
	for p in /run/lock/lockbox-example.lock /run/lock/lockbox-example-backup.lock \
		/var/lib/lockbox "${XDG_STATE_HOME:-$HOME/.local/state}/lockbox"; do
		[[ -e $p ]] || made+=("$p")
	done
	while IFS= read -r line; do
		[[ $line =~ ^[0-9*] ]] || continue
		# five time fields and the user, then the command
		read -r _ _ _ _ _ _ cmd <<<"$line"
		run timeout 120 env -i PATH=/usr/bin:/bin /bin/sh -c "$cmd"
		assert_success
		assert_output ''
		n=$((n + 1))
	done <"$EX/lockbox.cron"
	for p in "${made[@]+"${made[@]}"}"; do
		if [[ -d $p ]]; then
			rm -f -- "$p"/lockbox_example_sync-*.lock
			rmdir -- "$p" 2>/dev/null || true
		else
			rm -f -- "$p"
		fi
	done
	assert_equal "$n" 4
}
