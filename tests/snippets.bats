#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# shellcheck shell=bats
# The crontab lines and library scripts printed in README.md and the man
# pages, run as printed under cron's environment (env -i PATH=/usr/bin:/bin)
# against `make install` of the build under test. The install goes to a
# DESTDIR that a private mount namespace lays over the prefix, so
# the paths the snippets print (/usr/local/bin/...) are the installed ones;
# /run/lock, /var/log and /var/lib get empty file systems there, so the
# snippets' lock files, logs and state touch nothing of this machine's.
# A build configured with another prefix than the documented /usr/local
# runs them with that prefix in its place.

load test_helper

SRC=${LOCKBOX_SRCDIR:-$(cd "$BATS_TEST_DIRNAME/.." && pwd)}

# need_box: root, mount namespaces, and a build tree to install from.
need_box() {
	((EUID == 0)) || skip "needs root for a private mount namespace"
	command -v unshare >/dev/null || skip "needs unshare(1)"
	unshare -m true 2>/dev/null || skip "cannot make a mount namespace here"
	[[ -f $LOCKBOX_BUILDDIR/Makefile && $LOCKBOX == "$LOCKBOX_BUILDDIR/lockbox" ]] ||
		skip "needs the build tree of \$LOCKBOX to install from"
	PREFIX=$(sed -n 's/^prefix = //p' "$LOCKBOX_BUILDDIR/Makefile")
	[[ $PREFIX == /* && -d $PREFIX ]] || skip "the install prefix '$PREFIX' is not a directory here"
	DEST=$BATS_FILE_TMPDIR/dest
	if [[ ! -e $DEST.done ]]; then
		make -s -C "$LOCKBOX_BUILDDIR" install DESTDIR="$DEST" >/dev/null
		: >"$DEST.done"
	fi
	# what a job ran: its stubs append here
	RAN=$T/ran
	: >"$RAN"
}

# box CMD [ARG...]: run CMD as cron would, in a private mount namespace
# where the installed tree is at the prefix, under env -i PATH=/usr/bin:/bin.
box() {
	# shellcheck disable=SC2016 # expanded by the namespace's bash
	unshare -m --propagation private bash -c '
		set -e
		# the installed files over the prefix, the rest of it still seen
		mount -t overlay overlay -o "lowerdir=$1$2:$2" "$2" 2>/dev/null ||
			mount --bind "$1$2" "$2"
		for d in /run/lock /var/log /var/lib; do
			mount -t tmpfs -o mode=0755 tmpfs "$d"
		done
		shift 2
		exec env -i PATH=/usr/bin:/bin "$@"' box "$DEST" "$PREFIX" "$@"
}

# The literal blocks of a man page (.Bd -literal to .Ed, with the escapes
# it uses undone) and the fenced blocks of README.md: one file each,
# $T/snip/NAME.N.
blocks() {
	local f name
	mkdir -p "$T/snip"
	for f in "$SRC/README.md" "$SRC"/man/*.[1-8].in; do
		name=${f##*/}
		name=${name%.in}
		awk -v out="$T/snip/$name" '
			/^```/ { if (inb) { inb = 0; close(f) } else { inb = 1; f = out "." ++n }; next }
			/^\.Bd -literal/ { inb = 1; f = out "." ++n; next }
			/^\.Ed/ { if (inb) { inb = 0; close(f) }; next }
			inb { print > f }' "$f"
	done
	for f in "$T"/snip/*.[1-8].*; do
		[[ -e $f ]] || continue
		sed -i -e 's/\\&//g' -e 's/\\(dq/"/g' -e 's/\\-/-/g' -e 's/\\e/\\/g' "$f"
	done
}

# stub PATH: a job the snippet names under the install prefix: it notes
# that it ran, and its slot.
stub() {
	local f=$DEST$1
	[[ -e $f ]] && return 0
	mkdir -p "${f%/*}"
	# shellcheck disable=SC2016 # expanded by the stub's sh
	printf '#!/bin/sh\nprintf "%%s %%s\\n" "$0" "${LOCKBOX_SLOT-}" >>%q\n' "$RAN" >"$f"
	chmod +x "$f"
}

# bats test_tags=lockkind
@test "every crontab line of README.md and the man pages runs under cron's PATH" {
	need_box
	blocks
	local f line cmd w n=0
	while IFS= read -r f; do
		while IFS= read -r line; do
			[[ $line =~ ^([0-9*/,-]+[[:space:]]+){5}(.*)$ ]] || continue
			# the documented install is /usr/local: another build's prefix instead
			cmd=${BASH_REMATCH[2]//\/usr\/local\//$PREFIX/}
			n=$((n + 1))
			# a crontab has no continuation lines
			refute_regex "$line" '\\$'
			# cron's PATH has no applet of lockbox: it must be named by its path
			assert_regex "$cmd" '^/'
			for w in $cmd; do
				if [[ $w == "$PREFIX"/* && ! -e $DEST$w ]]; then
					stub "$w"
				fi
			done
			: >"$RAN"
			# cron runs the line with /bin/sh -c
			run -0 --separate-stderr box /bin/sh -c "$cmd"
			assert_equal "$output" ""
			assert_stderr ""
			# the job itself ran
			run -0 cat "$RAN"
			assert_regex "$output" "^$(re_quote "${cmd##* }") "
		done <"$f"
	done < <(grep -lE '^([0-9*/,-]+[[:space:]]+){5}' "$T"/snip/*)
	# README's two, lockbox(1)'s, mutex(1)'s, slots(1)'s and adaptive(1)'s
	assert [ "$n" -ge 6 ]
}

# bats test_tags=lockkind,privilege
@test "the library scripts of README.md and lockbox-shell(7) run under cron's PATH" {
	need_ofd	# the library locks the fd its shell opened: --fd
	need_box
	blocks
	local f n=0 lib=''
	# the commands a script stands for, which are not lockbox's, as functions
	local stubs
	printf -v stubs '%s\n' \
		"rsync() { :; }" \
		"encode() { printf 'encode %s\\n' \"\$LOCKBOX_SLOT\" >>$(printf %q "$RAN"); }" \
		"publish() { printf 'publish\\n' >>$(printf %q "$RAN"); }" \
		"critical_section() { printf 'critical\\n' >>$(printf %q "$RAN"); }"
	for f in "$T"/snip/README.md.* "$T"/snip/lockbox-shell.7.*; do
		[[ -e $f ]] || continue
		case $f in
		*/README.md.*) grep -q -- '--shell-lib' "$f" || continue ;;
		esac
		n=$((n + 1))
		{
			if [[ $(head -n 1 "$f") == '#!'* ]]; then
				head -n 1 "$f"
				printf '%s' "$stubs"
				tail -n +2 "$f"
				# the library's line, for a fragment of lockbox-shell(7)
				lib=$(grep -m 1 -- '--shell-lib' "$f")
			else
				printf '#!/bin/bash\nset -euo pipefail\n%s\n%s' "$lib" "$stubs"
				cat "$f"
			fi
		} >"$f.tmp"
		sed "s|/usr/local/|$PREFIX/|g" "$f.tmp" >"$f.sh"
		chmod +x "$f.sh"
		: >"$RAN"
		run -0 --separate-stderr box "$f.sh"
		assert_stderr ""
		case $(grep -c . "$RAN") in
		0) assert_equal "$output" "" ;;
		*) assert_regex "$(cat "$RAN")" '^(encode 1
publish|critical)$' ;;
		esac
	done
	# README's, and lockbox-shell(7)'s cron job and its waitfor fragment
	assert_equal "$n" 3
	assert_regex "$lib" "/lockbox --shell-lib"
}

# bats test_tags=lockkind,privilege
@test "the installed library names the installed binary; the build tree's names the build's" {
	need_ofd	# the library locks the fd its shell opened: --fd
	need_box
	run -0 grep -x "_lockbox_built='$PREFIX/bin/lockbox'" "$DEST$PREFIX/share/lockbox/lockbox.bash"
	run -0 grep -x "_lockbox_built='$LOCKBOX_BUILDDIR/lockbox'" "$LOCKBOX_BUILDDIR/lockbox.bash"
	# the installed binary prints the installed copy
	run -0 --separate-stderr box "$PREFIX/bin/lockbox" --shell-lib
	assert_output "$PREFIX/share/lockbox/lockbox.bash"
	# sourced with no lockbox in PATH, each runs its own binary
	# shellcheck disable=SC2016 # expanded by the script's bash
	run -0 --separate-stderr box bash -euo pipefail -c \
		'. "$("$1" --shell-lib)"; acquire_mutex /run/lock/x.lock; "$1" mutex /run/lock/x.lock check' \
		sh "$PREFIX/bin/lockbox"
	assert_output 1
	assert_stderr ""
	# shellcheck disable=SC2016 # expanded by the script's bash
	run -0 --separate-stderr env -i PATH=/usr/bin:/bin bash -euo pipefail -c \
		'. "$("$1" --shell-lib)"; acquire_mutex "$2"; "$1" mutex "$2" check' sh "$LOCKBOX" "$F"
	assert_output 1
	assert_stderr ""
}
