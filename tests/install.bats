#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# make install / make uninstall into a DESTDIR: the applet links are made
# and removed, a file lockbox did not put there is never replaced nor
# deleted, and uninstall leaves nothing of lockbox behind.


load test_helper
# bats file_tags=packaging

setup() {
	lockbox_setup
	[[ -f $LOCKBOX_BUILDDIR/Makefile ]] || skip "no build tree at $LOCKBOX_BUILDDIR"
	D=$T/root
	mkdir -p "$D"
}

# make in the build tree, not part of a make running this test
mk() {
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$LOCKBOX_BUILDDIR" "$@" DESTDIR="$D"
}

# a Makefile variable of the build tree, expanded
mkvar() {
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$LOCKBOX_BUILDDIR" \
		--eval="lb-print-var: ; @echo \$($1)" lb-print-var
}

# bats test_tags=lockkind
@test "install: the applet links point at lockbox, uninstall removes everything it made" {
	local bindir comp pkgdata pkglibexec a
	bindir=$D$(mkvar bindir)
	comp=$D$(mkvar bashcompletiondir)
	pkgdata=$D$(mkvar pkgdatadir)
	pkglibexec=$D$(mkvar pkglibexecdir)
	run mk install
	assert_success
	for a in slots mutex waitfor adaptive; do
		[[ -L $bindir/$a ]]
		assert_equal "$(readlink "$bindir/$a")" lockbox
		assert_equal "$(readlink "$comp/$a")" lockbox
	done
	# lockbox locks has no link: a name too common for bindir
	[[ ! -e $bindir/locks && ! -e $comp/locks ]]
	run "$bindir/slots" --help
	assert_success
	assert_line --partial 'usage: slots'
	[[ -f $pkgdata/lockbox.bash && -f $pkgdata/lockbox-fallback.bash &&
		-f $pkgdata/lockbox-fallback-waitfor.bash ]]
	[[ -f $comp/lockbox ]]
	# the installed library names the installed binary, builtin and
	# fallback, by their installed paths (DESTDIR is no part of them)
	run -0 grep -x "_lockbox_built='$(mkvar bindir)/lockbox'" "$pkgdata/lockbox.bash"
	run -0 grep -x "_lockbox_fallback='$(mkvar pkgdatadir)/lockbox-fallback.bash'" "$pkgdata/lockbox.bash"
	if [[ -n $(mkvar LB_BUILTIN_INSTALLED) ]]; then
		[[ -f $D$(mkvar LB_BUILTIN_INSTALLED) ]]
		run -0 grep -x "_lockbox_builtin_so='$(mkvar LB_BUILTIN_INSTALLED)'" "$pkgdata/lockbox.bash"
	else
		run -0 grep -x "_lockbox_builtin_so=''" "$pkgdata/lockbox.bash"
	fi
	# again over its own links: fine, and no warning
	run mk install
	assert_success
	refute_output --partial 'not replacing'

	run mk uninstall
	assert_success
	run find "$D" ! -type d
	assert_output ''
	[[ ! -e $pkgdata ]]
	[[ ! -e $pkglibexec ]]
	[[ ! -e $D$(mkvar pkglibdir) ]]
}

# bats test_tags=lockkind,privilege
@test "install: a file lockbox did not put there is neither replaced nor deleted" {
	local bindir comp
	bindir=$D$(mkvar bindir)
	comp=$D$(mkvar bashcompletiondir)
	mkdir -p "$bindir" "$comp"
	printf '#!/bin/sh\necho mine\n' >"$bindir/mutex"
	chmod +x "$bindir/mutex"
	ln -s /bin/true "$bindir/waitfor"
	ln -s nowhere "$bindir/adaptive"
	printf 'complete -F _mine slots\n' >"$comp/slots"

	run --separate-stderr mk install
	assert_success
	# shellcheck disable=SC2154 # set by run --separate-stderr
	[[ $stderr == *"not replacing $bindir/mutex"* ]]
	[[ $stderr == *"not replacing $bindir/waitfor"* ]]
	[[ $stderr == *"not replacing $bindir/adaptive"* ]]
	[[ $stderr == *"not replacing $comp/slots"* ]]
	assert_equal "$("$bindir/mutex")" mine
	assert_equal "$(readlink "$bindir/waitfor")" /bin/true
	assert_equal "$(readlink "$bindir/adaptive")" nowhere
	assert_equal "$(readlink "$bindir/slots")" lockbox
	assert_equal "$(cat "$comp/slots")" 'complete -F _mine slots'

	run mk uninstall
	assert_success
	assert_equal "$("$bindir/mutex")" mine
	assert_equal "$(readlink "$bindir/waitfor")" /bin/true
	assert_equal "$(readlink "$bindir/adaptive")" nowhere
	assert_equal "$(cat "$comp/slots")" 'complete -F _mine slots'
	run find "$D" ! -type d
	assert_equal "$(printf '%s\n' "${lines[@]}" | sort)" \
		"$(printf '%s\n' "$bindir/adaptive" "$bindir/mutex" "$bindir/waitfor" "$comp/slots" | sort)"
}

# bats test_tags=lockkind
@test "install: the man pages carry this build's version and paths, and man finds them" {
	local man1 pkglibexec pkgdata version p
	man1=$D$(mkvar mandir)/man1
	pkglibexec=$(mkvar pkglibexecdir)
	pkgdata=$(mkvar pkgdatadir)
	version=$(mkvar PACKAGE_STRING)
	run mk install
	assert_success
	for p in "$man1"/*.1 "$D$(mkvar mandir)"/man7/*.7; do
		run grep -x "\.Os $version" "$p"
		assert_success
		run grep -E '@[A-Z_]+@|[$]Mdocdate' "$p"
		assert_failure
	done
	run grep -x "\.It Pa $pkglibexec/lockbox-pg" "$man1/lockbox.1"
	assert_success
	run grep -x "\.It Pa $pkgdata/lockbox.bash" "$man1/lockbox.1"
	assert_success
	if command -v mandoc >/dev/null; then
		run mandoc -Tlint -Wwarning "$man1"/*.1 "$D$(mkvar mandir)"/man7/*.7
		assert_success
	fi
	command -v man >/dev/null || skip "no man(1)"
	run env MANPAGER=cat MANWIDTH=80 man -M "$D$(mkvar mandir)" slots
	assert_success
	assert_line --regexp '^SLOTS\(1\) +General Commands Manual +SLOTS\(1\)$'
	assert_line --regexp "^$version +"
}
