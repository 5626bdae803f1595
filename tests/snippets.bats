#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# shellcheck shell=bats
# Every example block of README.md and the man pages, run as printed
# against `make install` of the build under test, where the package puts
# lockbox: the blocks name /usr/bin/lockbox, /usr/bin/mutex, ... The
# install goes to a DESTDIR; a private mount namespace lays it over the
# prefix, and lays over /usr/bin links to the installed lockbox, so that
# /usr/bin/mutex is the mutex under test, whatever the prefix. /run/lock,
# /var/log, /var/lib and /var/tmp get empty file systems there, so the
# examples' lock files, logs and state touch nothing of this machine's.
# The commands an example stands for (backup, ./encode.sh, encode,
# /usr/local/bin/sync-mirrors) are stubs that note that they ran.
#
# A block is run when it starts with a command; it is shown text when it
# starts with anything else (messages, tables, units, logs, SQL). A
# script to install, which takes its arguments ("$1") when it is used, is
# checked by the shell it names and not run (its own test runs it). Blocks
# that build or install lockbox itself are not run. Those that need a
# PostgreSQL server by its name run in a network namespace of their own,
# where db and db.example.com are a throwaway server on 127.0.0.1:5432
# (as root, with the server's programs; "sudo -u postgres psql" is psql
# as its superuser). Every block is one of these, by rule.

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
	# the stubs, by the directory they stand in, and what a job ran
	STUB=$T/stub
	RAN=$T/ran
	WORK=$T/work
	mkdir -p "$STUB/usr/bin" "$STUB/usr/local/bin" "$STUB/usr/local/sbin" "$STUB/path" "$WORK"
	: >"$RAN"
	# /usr/bin/lockbox and its applets: the installed binary
	local a
	for a in lockbox slots mutex waitfor adaptive; do
		ln -sf "$PREFIX/bin/lockbox" "$STUB/usr/bin/$a"
	done
}

# box CMD [ARG...]: run CMD in a private mount namespace where the
# installed tree is at the prefix, /usr/bin has lockbox's links and the
# stubs, and the places the examples write are empty file systems.
box() {
	local -a net=()
	[[ -z ${SERVER:-} ]] || net=(-n)
	# shellcheck disable=SC2016 # expanded by the namespace's bash
	unshare -m "${net[@]}" --propagation private bash -c '
		set -e
		dest=$1 prefix=$2 stub=$3 server=$4 owner=$5 pgbin=$6
		shift 6
		# with SERVER, a network of its own, where db and db.example.com
		# are a PostgreSQL server on 127.0.0.1:5432 whose local socket is
		# where psql looks for it
		if [ -n "$server" ]; then
			ip link set lo up
			mount -t tmpfs -o mode=0755 tmpfs /run
			mkdir -p /run/lock /run/postgresql
			chown "$owner" /run/postgresql
			printf "127.0.0.1 localhost db db.example.com\n" >/run/hosts
			mount --bind /run/hosts /etc/hosts
			runuser -u "$owner" -- "$pgbin/pg_ctl" -D "$server/data" -l "$server/log" -w -s \
				-o "-c listen_addresses=127.0.0.1 -p 5432 -k /run/postgresql -c fsync=off -c ssl=on" start
			trap "runuser -u \"$owner\" -- \"$pgbin/pg_ctl\" -D \"$server/data\" -m immediate -w -s stop" EXIT
			# the role the examples connect as, when their URL names none
			psql -U postgres -XAtq -c "CREATE ROLE $(id -un) SUPERUSER LOGIN" >/dev/null
			if [ -n "${SERVER_OPS:-}" ]; then
				psql -U postgres -XAtq -c "CREATE DATABASE ops" >/dev/null
			fi
		fi
		# the installed files over the prefix, the rest of it still seen
		mount -t overlay overlay -o "lowerdir=$dest$prefix:$prefix" "$prefix" 2>/dev/null ||
			mount --bind "$dest$prefix" "$prefix"
		# the stubs over the directories the examples name them in
		for d in /usr/bin /usr/local/bin /usr/local/sbin; do
			[ -d "$d" ] || continue
			mount -t overlay overlay -o "lowerdir=$stub$d:$d" "$d"
		done
		for d in /run/lock /var/log /var/lib /var/tmp; do
			mount -t tmpfs -o mode=1777 tmpfs "$d"
		done
		"$@"' box "$DEST" "$PREFIX" "$STUB" "${SERVER:-}" "${SERVER_OWNER:-}" "${PGBIN:-}" "$@"
}

# need_server: SERVER, a PostgreSQL cluster made for the box to start:
# superuser postgres, trusted but for the role lockbox, which gives its
# password over TCP (lockbox-postgresql(7)'s Setting up makes it), SSL
# with a certificate of its own. As root it runs as postgres (or nobody);
# its directory is one that user can reach.
need_server() {
	server_here || skip "$SERVER_WHY"
}

# server_here: need_server's work, or 1 and SERVER_WHY.
server_here() {
	local d
	PGBIN=$(pg_config --bindir 2>/dev/null) || PGBIN=
	if [[ ! -x $PGBIN/initdb ]]; then
		PGBIN=
		for d in /usr/lib/postgresql/*/bin; do
			[[ -x $d/initdb ]] && PGBIN=$d
		done
	fi
	SERVER_WHY="no PostgreSQL server programs (initdb)"
	[[ -n $PGBIN ]] || return 1
	SERVER_WHY="needs ip(8), openssl(1) and psql(1)"
	command -v ip >/dev/null && command -v openssl >/dev/null && command -v psql >/dev/null || return 1
	SERVER_WHY="cannot make a network namespace here"
	unshare -n true 2>/dev/null || return 1
	SERVER_WHY="this build has no PostgreSQL helper"
	[[ -x ${LOCKBOX_PG_HELPER:-} ]] || return 1
	SERVER_OWNER=postgres
	id -u "$SERVER_OWNER" >/dev/null 2>&1 || SERVER_OWNER=nobody
	SERVER=$(mktemp -d "${TMPDIR:-/tmp}/lockbox-snippets-pg.XXXXXX")
	CLEANUP_DIRS+=("$SERVER")
	mkdir "$SERVER/data"
	chown "$SERVER_OWNER" "$SERVER" "$SERVER/data"
	chmod 0700 "$SERVER/data"
	runuser -u "$SERVER_OWNER" -- "$PGBIN/initdb" -D "$SERVER/data" -U postgres --auth=trust \
		-E UTF8 --no-sync >"$T/initdb.log" 2>&1 || fail "initdb: $(cat "$T/initdb.log")"
	openssl req -new -x509 -days 2 -nodes -subj /CN=db -keyout "$SERVER/data/server.key" \
		-out "$SERVER/data/server.crt" 2>/dev/null
	chown "$SERVER_OWNER" "$SERVER/data/server.key" "$SERVER/data/server.crt"
	chmod 0600 "$SERVER/data/server.key"
	{ printf 'host all lockbox 127.0.0.1/32 scram-sha-256\n'; cat "$SERVER/data/pg_hba.conf"; } >"$T/hba"
	cat "$T/hba" >"$SERVER/data/pg_hba.conf"
	# "sudo -u postgres psql": psql as the database's superuser
	# shellcheck disable=SC2016 # expanded by the stub's sh
	printf '#!/bin/sh\nif [ "$1" = -u ]; then PGUSER=$2; export PGUSER; shift 2; fi\nexec "$@"\n' >"$STUB/path/sudo"
	chmod +x "$STUB/path/sudo"
}

# The literal blocks of a man page (.Bd -literal to .Ed, with the escapes
# it uses undone, "..." standing for the script's own lines) and the
# fenced blocks of README.md: one file each, $T/snip/NAME.N.
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

CRON_RE='^([0-9*/,-]+[[:space:]]+){5}(.*)$'
RUN_RE='^(#!|\. |exec |if |for |printf |(lockbox|slots|mutex|waitfor|adaptive) )'

# kind FILE: what a block is, on stdout: build (builds or installs lockbox
# itself), server (needs a PostgreSQL server by its name), transcript
# ("$ command" and what it prints), script (one to install, that takes
# arguments), run (commands, cron lines, a script), or text (anything
# else: messages, tables, units, logs, SQL).
kind() {
	local first
	first=$(grep -v -m 1 -e '^#[^!]' -e '^$' "$1")
	if grep -qE '^(tools/|apt |autoreconf )' "$1"; then
		printf 'build\n'
	elif [[ $first == '#!'* ]] && grep -qF "\"\$1" "$1"; then
		printf 'script\n'
	elif grep -qE 'postgres(ql)?://|sudo -u postgres' "$1"; then
		printf 'server\n'
	elif [[ $first == '$ '* ]]; then
		printf 'transcript\n'
	elif [[ $first =~ $CRON_RE || $first =~ $RUN_RE ]]; then
		printf 'run\n'
	else
		printf 'text\n'
	fi
}

# ekind FILE: the kind of block FILE is, as this run takes it: a server's
# runs where there is a server (SERVER), as a transcript or commands
ekind() {
	local k
	k=$(kind "$1")
	if [[ $k == server && -n ${SERVER:-} ]]; then
		k=run
		[[ $(head -n 1 "$1") != '$ '* ]] || k=transcript
	fi
	printf '%s\n' "$k"
}

# stubs FILE: a stub for every command FILE names that is not there: a
# word ./X in the work directory, /usr/bin/X, /usr/local/bin/X and
# /usr/local/sbin/X in their directory, a bare name in the stubs' PATH
# directory; and the directories of the lock files it names.
stubs() {
	local - w stub
	set -f
	# shellcheck disable=SC2016 # expanded by the stub's sh
	printf -v stub '#!/bin/sh\nprintf "%%s %%s\\n" "$0" "${LOCKBOX_SLOT-}" >>%q\n' "$RAN"
	for w in $(tr -s "\"'();|&<>=\`" ' ' <"$1"); do
		case $w in
		./[A-Za-z]*) [[ -e $WORK/$w ]] || printf '%s' "$stub" >"$WORK/$w" ;;
		/usr/bin/[A-Za-z]* | /usr/local/bin/[A-Za-z]* | /usr/local/sbin/[A-Za-z]*)
			[[ -e $w || -e $STUB$w ]] || printf '%s' "$stub" >"$STUB$w"
			;;
		/run/lock/*/*) mkdir -p "$WORK/dirs${w%/*}" ;;
		/var/lock/*/*) w=/run/lock/${w#/var/lock/} && mkdir -p "$WORK/dirs${w%/*}" ;;
		[a-z]*)
			# a name the box's PATH has (lockbox's own there), or the shell's, is itself
			[[ $w =~ ^[a-z][A-Za-z0-9._-]*$ ]] || continue
			[[ -e $STUB/usr/bin/$w || -e /usr/bin/$w || -e /bin/$w || -e /usr/sbin/$w ||
				-e /sbin/$w || -e $STUB/path/$w ]] && continue
			[[ $(type -t "$w") == @(builtin|keyword) ]] && continue
			printf '%s' "$stub" >"$STUB/path/$w"
			;;
		esac
	done
	set +f
	chmod +x "$WORK"/* "$STUB"/usr/bin/* "$STUB"/usr/local/*bin/* "$STUB"/path/* 2>/dev/null || :
}

# as_script FILE: the block as a script runs it: a crontab line as cron
# runs it (sh -c, cron's PATH, no other environment), "..." (the script's
# own lines) as nothing
as_script() {
	local line q="'\\''"
	while IFS= read -r line; do
		if [[ $line =~ $CRON_RE ]]; then
			line=${BASH_REMATCH[2]}
			printf "env -i PATH=/usr/bin:/bin /bin/sh -c '%s'\n" "${line//\'/$q}"
		elif [[ $line == ... ]]; then
			printf ':\n'
		else
			printf '%s\n' "$line"
		fi
	done <"$1"
}

# driver FILE...: the script that runs the blocks FILE... in order, in one
# namespace (a page's state carries from block to block, as a reader's
# would), each as cron or a shell would run it; its status, output and
# errors in FILE.rc, FILE.out and FILE.err.
driver() {
	local f
	printf '#!/bin/bash\n'
	# the lock files' directories the examples take for granted
	printf 'if [ -d %q ]; then cp -a %q/. /; fi\n' "$WORK/dirs" "$WORK/dirs"
	printf 'cd %q\n' "$WORK"
	# ~/.pgpass and the like, in a home of the test's
	# shellcheck disable=SC2016 # expanded by the driver
	printf 'export HOME=%q\nmkdir -p "$HOME"\n' "$WORK/home"
	for f in "$@"; do
		case $(ekind "$f") in
		transcript)
			# the command of "$ command"
			printf '%s\n' "$(sed -n '1s/^\$ //p' "$f")" >"$f.sh"
			;;
		run) as_script "$f" >"$f.sh" ;;
		*) continue ;;
		esac
		if [[ $(head -n 1 "$f.sh") == '#!'* ]]; then
			printf 'chmod +x %q; %q <&- >%q 2>%q; echo $? >%q\n' \
				"$f.sh" "$f.sh" "$f.out" "$f.err" "$f.rc"
		else
			printf 'bash -e %q <&- >%q 2>%q; echo $? >%q\n' "$f.sh" "$f.out" "$f.err" "$f.rc"
		fi
	done
}

# run_page NAME: every block of README.md or man/NAME.in, as printed.
run_page() {
	local page=$1 f k i n=0 ran=0 want
	local -a files=()
	need_box
	blocks
	# in the order printed
	for ((i = 1; ; i++)); do
		[[ -e $T/snip/$page.$i ]] || break
		files+=("$T/snip/$page.$i")
	done
	for f in "${files[@]}"; do
		case $(ekind "$f") in
		run | transcript) stubs "$f" ;;
		esac
	done
	driver "${files[@]}" >"$T/driver"
	chmod +x "$T/driver"
	PATH=$STUB/path:/usr/bin:/bin:/usr/sbin:/sbin run -0 box "$T/driver"
	for f in "${files[@]}"; do
		k=$(ekind "$f")
		n=$((n + 1))
		case $k in
		script)
			# its shell reads it whole
			run -0 "$(sed -n '1s/^#! *//p' "$f")" -n "$f"
			;;
		run)
			ran=$((ran + 1))
			# a block that locks a shell's own fd (--fd, the library) may
			# stop on a classic-locks build, saying that it needs OFD locks
			if [[ $(cat "$f.rc") != 0 ]] && ! ofd_build && grep -qE -- '--fd|--shell-lib' "$f"; then
				assert grep -q 'needs open file description locks' "$f.err"
				continue
			fi
			if [[ $(cat "$f.rc") != 0 ]]; then
				printf '%s: status %s\n--- the block\n%s\n--- its output\n%s\n--- its errors\n%s\n' \
					"${f##*/}" "$(cat "$f.rc")" "$(cat "$f")" "$(cat "$f.out")" "$(cat "$f.err")"
				return 1
			fi
			# a block of crontab lines alone: cron mails nothing
			if ! grep -qvE "$CRON_RE|^#|^[A-Z]+=|^$" "$f"; then
				assert_equal "${f##*/}: $(cat "$f.out" "$f.err")" "${f##*/}: "
			fi
			;;
		transcript)
			ran=$((ran + 1))
			# what it prints: a message (0 or 75, by what ran before), or a
			# report, whose header line is as printed
			want=$(sed -n 2p "$f")
			if [[ $want =~ ^(lockbox|slots|mutex|waitfor|adaptive):\  ]]; then
				assert_regex "${f##*/}: $(cat "$f.rc")" ': (0|75)$'
			else
				assert_equal "${f##*/}: $(cat "$f.rc")" "${f##*/}: 0"
			fi
			# (a file nobody holds lists nothing, not even the header)
			if [[ $want == SLOT* && -s $f.out ]]; then
				assert_equal "${f##*/}: $(head -n 1 "$f.out")" "${f##*/}: $want"
			fi
			;;
		esac
	done
	RAN_BLOCKS=$ran
	# the page has blocks, and this rule took every one of them
	assert [ "$n" -gt 0 ]
}

@test "README.md: every example block runs as printed, lockbox as installed" {
	need_box
	# its server's lines too, where a server can be made: there is a database ops
	local want=7
	server_here && export SERVER_OPS=1 && want=8
	run_page README.md
	assert [ "$RAN_BLOCKS" -ge "$want" ]
	# the crontab lines' jobs ran: the stubs noted it
	run -0 grep -c . "$RAN"
}

@test "lockbox(1): every example block runs as printed" {
	run_page lockbox.1
	assert [ "$RAN_BLOCKS" -ge 5 ]
}

# bats test_tags=lockkind
@test "mutex(1): every example block runs as printed" {
	run_page mutex.1
	assert [ "$RAN_BLOCKS" -ge 10 ]
}

# bats test_tags=lockkind
@test "slots(1): every example block runs as printed" {
	run_page slots.1
	assert [ "$RAN_BLOCKS" -ge 7 ]
}

# bats test_tags=lockkind
@test "adaptive(1): every example block runs as printed" {
	run_page adaptive.1
	assert [ "$RAN_BLOCKS" -ge 3 ]
}

@test "waitfor(1) and lockbox-systemd(7): every example block runs as printed" {
	run_page waitfor.1
	assert [ "$RAN_BLOCKS" -ge 2 ]
	run_page lockbox-systemd.7
	assert [ "$RAN_BLOCKS" -ge 1 ]
}

@test "lockbox-postgresql(7): every example block runs as printed, against a server named db and db.example.com" {
	need_box
	need_server
	run_page lockbox-postgresql.7
	# Setting up's two, Setting up TLS's two, and the three examples
	assert_equal "$RAN_BLOCKS" 7
	# as the user of Setting up, then over TLS checked against the new CA
	assert_equal "$(cat "$T/snip/lockbox-postgresql.7.3.out")" ok
	assert_equal "$(cat "$T/snip/lockbox-postgresql.7.6.out")" ok
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
		[[ $f =~ \.[0-9]+$ ]] || continue
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
		} >"$f.sh"
		chmod +x "$f.sh"
		: >"$RAN"
		run -0 --separate-stderr box env -i PATH=/usr/bin:/bin "$f.sh"
		assert_stderr ""
		case $(grep -c . "$RAN") in
		0) assert_equal "$output" "" ;;
		*) assert_regex "$(cat "$RAN")" '^(encode 1
publish|critical)$' ;;
		esac
	done
	# README's, and lockbox-shell(7)'s cron job and its waitfor fragment
	assert_equal "$n" 3
	# shellcheck disable=SC2016 # the line as printed
	assert_equal "$lib" '. "$(/usr/bin/lockbox --shell-lib)"'
}

# bats test_tags=lockkind,privilege
@test "the installed library names the installed binary; the build tree's names the build's" {
	need_ofd	# the library locks the fd its shell opened: --fd
	need_box
	run -0 grep -x "_lockbox_built='$PREFIX/bin/lockbox'" "$DEST$PREFIX/share/lockbox/lockbox.bash"
	run -0 grep -x "_lockbox_built='$LOCKBOX_BUILDDIR/lockbox'" "$LOCKBOX_BUILDDIR/lockbox.bash"
	# the installed binary prints the installed copy, by /usr/bin's link too
	run -0 --separate-stderr box "$PREFIX/bin/lockbox" --shell-lib
	assert_output "$PREFIX/share/lockbox/lockbox.bash"
	run -0 --separate-stderr box /usr/bin/lockbox --shell-lib
	assert_output "$PREFIX/share/lockbox/lockbox.bash"
	# sourced with no lockbox in PATH, each runs its own binary
	# shellcheck disable=SC2016 # expanded by the script's bash
	run -0 --separate-stderr box env -i PATH=/bin bash -euo pipefail -c \
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
