#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# The bash completion (completion/lockbox.bash), driven as bash drives it:
# COMP_WORDS and COMP_CWORD set, the function called, COMPREPLY read.
# With the bash-completion framework when it is installed, and without.

load test_helper
# bats file_tags=packaging

setup() {
	lockbox_setup
	# the tree's, or (tools/deb-check) the installed one
	COMPLETION=${LOCKBOX_COMPLETION:-${LOCKBOX_SRCDIR:-$BATS_TEST_DIRNAME/..}/completion/lockbox.bash}
	# the binary under test answers for lockbox and its applet names
	mkdir -p "$T/bin"
	ln -s "$LOCKBOX" "$T/bin/lockbox"
	local a
	for a in slots mutex waitfor adaptive; do
		ln -s lockbox "$T/bin/$a"
	done
}

# complete WORD... : the completions of the last word, one a line, sorted
# (in a fresh bash, with or without the framework: LB_FRAMEWORK=1). The
# words are split as bash splits them, at ':' and '=' too; a completion is
# printed whole (with the part of its word before the last split).
complete_words() {
	# shellcheck disable=SC2016 # expanded by the inner bash
	PATH=$T/bin:$PATH HOME=$T bash -c '
		if [[ ${LB_FRAMEWORK:-} == 1 ]]; then
			. /usr/share/bash-completion/bash_completion || exit 1
		fi
		. "$1" || exit 1
		shift
		COMP_WORDS=()
		for w in "$@"; do
			[[ -n $w ]] || COMP_WORDS+=("")
			while [[ $w =~ ^([:=]+)(.*)$ || $w =~ ^([^:=]+)(.*)$ ]]; do
				COMP_WORDS+=("${BASH_REMATCH[1]}")
				w=${BASH_REMATCH[2]}
			done
		done
		COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
		COMP_LINE="$*"
		COMP_POINT=${#COMP_LINE}
		COMPREPLY=()
		_lockbox || exit 1
		last=${!#}
		pre=${last%"${COMP_WORDS[COMP_CWORD]}"}
		for r in "${COMPREPLY[@]}"; do
			printf "%s\n" "$pre$r"
		done | sort
	' complete "$COMPLETION" "$@"
}

framework() {
	[[ -f /usr/share/bash-completion/bash_completion ]] ||
		skip "bash-completion is not installed"
	export LB_FRAMEWORK=1
}

@test "completion: shellcheck clean" {
	command -v shellcheck >/dev/null || skip "no shellcheck"
	run shellcheck "$COMPLETION"
	assert_success
}

# bats test_tags=lockkind
@test "completion: applets and lockbox's own options" {
	run complete_words lockbox ''
	assert_success
	assert_output "$(printf '%s\n' --help --list --shell-lib --version adaptive locks mutex slots waitfor)"
	run complete_words lockbox sl
	assert_output slots
}

# bats test_tags=lockkind,wait
@test "completion: each applet's options come from its --help" {
	run complete_words slots --w
	assert_output --wait
	run complete_words lockbox mutex --conf
	assert_output --conflict-exit-code
	run complete_words waitfor --re
	assert_output --retry-on
	run complete_words adaptive -
	assert_line --if-elapsed
	assert_line --expire-after
	assert_line -d
	assert_line --syslog
	run complete_words adaptive --on-loss ''
	assert_line TERM
	assert_line none
}

# bats test_tags=lockkind,wait
@test "completion: subcommands, lock files and the command" {
	cd "$T"
	: >job.lock
	run complete_words slots ''
	assert_line acquire
	assert_line release
	assert_line job.lock
	# an option's argument is skipped over
	run complete_words slots -w 5 job
	assert_output job.lock
	run complete_words slots job.lock ''
	assert_output "$(printf '%s\n' check create held list)"
	run complete_words mutex job.lock ''
	assert_line check
	assert_line list
	assert_line create
	assert_line bash
	run complete_words slots job.lock 4 basenam
	assert_output basename
	run complete_words waitfor 3 5 basenam
	assert_output basename
	# nothing after check
	run complete_words slots job.lock check ''
	assert_output ''
	run complete_words slots acquire --f
	assert_output --fd
	# a postgresql:// target is one word, though bash splits it at : and =
	run complete_words slots 'postgresql://db/ops?lock=x' ''
	assert_output "$(printf '%s\n' check create held list)"
	run complete_words slots --wait=5 'postgresql://db/ops?lock=x' 4 basenam
	assert_output basename
}

# bats test_tags=lockkind
@test "completion: the command's own words go to its completion" {
	framework
	cd "$T"
	run complete_words mutex job.lock ls --al
	assert_line --all
}

# bats test_tags=lockkind
@test "completion: adaptive status completes the atoms of the state directory" {
	mkdir "$T/state"
	"$LOCKBOX" adaptive -q -d "$T/state" nightly-sync true
	"$LOCKBOX" adaptive -q -d "$T/state" 'edit:/etc/motd' true
	run complete_words adaptive -d "$T/state" status ''
	assert_output "$(printf '%s\n' 'edit:/etc/motd' nightly-sync)"
	run complete_words adaptive -d "$T/state" status nig
	assert_output nightly-sync
	# bash splits a word at ':', the completion takes it whole
	run complete_words adaptive -d "$T/state" status edit:/e
	assert_output 'edit:/etc/motd'
	run complete_words adaptive -d "$T/state" status edit:
	assert_output 'edit:/etc/motd'
	run complete_words adaptive --dir="$T/state" status edit
	assert_output 'edit:/etc/motd'
	run complete_words adaptive -d "$T/state" ''
	assert_line nightly-sync
	assert_line status
	# options go before status
	run complete_words adaptive -d "$T/state" status --
	assert_output ''
	# $LOCKBOX_DIR is the default state directory
	LOCKBOX_DIR=$T/state run complete_words lockbox adaptive status nig
	assert_output nightly-sync
	# an atom named already is not offered again
	run complete_words adaptive -d "$T/state" status nightly-sync ''
	assert_output 'edit:/etc/motd'
	run complete_words adaptive -d "$T/state" status nightly-sync edit:/etc/motd ''
	assert_output ''
	run complete_words adaptive -d "$T/state" status edit:/etc/motd nig
	assert_output nightly-sync
}

# bats test_tags=lockkind,wait
@test "completion: with the bash-completion framework too" {
	framework
	cd "$T"
	: >job.lock
	run complete_words slots -w 5 job
	assert_output job.lock
	run complete_words adaptive --dir ''
	refute_output --partial job.lock
	run complete_words slots job.lock 4 basenam
	assert_output basename
}

# bats test_tags=lockkind,privilege
@test "completion: bash-completion loads it on demand for lockbox and each applet" {
	framework
	local d=$T/.local/share/bash-completion/completions a
	# the installed layout: the file named lockbox, links for the applets
	mkdir -p "$d"
	cp "$COMPLETION" "$d/lockbox"
	for a in slots mutex waitfor adaptive; do
		ln -s lockbox "$d/$a"
	done
	for a in lockbox slots mutex waitfor adaptive; do
		# shellcheck disable=SC2016 # expanded by the inner bash
		run env HOME="$T" XDG_DATA_HOME= BASH_COMPLETION_USER_DIR= XDG_DATA_DIRS=/nonexistent bash -c '
			. /usr/share/bash-completion/bash_completion || exit 1
			__load_completion "$1" && complete -p "$1"' load "$a"
		assert_success
		assert_output "complete -F _lockbox $a"
	done
}
