#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# shellcheck shell=bats
# acquire --fd: an fd that holds a slot already, fds not open for reading
# and writing, and --path, which proves the fd is the file a path names.

load test_helper
# bats file_tags=lockkind

# fd_holding_3: FD3 holds slot 3 of $F, alone (slots 1 and 2 taken and
# given back), with the file's bytes in BEFORE.
fd_holding_3() {
	local a b
	exec {a}<>"$F" {b}<>"$F" {FD3}<>"$F"
	run -0 "$LOCKBOX" slots acquire --fd "$a" 3
	run -0 "$LOCKBOX" slots acquire --fd "$b" 3
	run -0 "$LOCKBOX" slots acquire --fd "$FD3" 3
	assert_output 3
	"$LOCKBOX" slots release --fd "$a"
	"$LOCKBOX" slots release --fd "$b"
	exec {a}>&- {b}>&-
	run -0 "$LOCKBOX" slots "$F" list
	assert_equal "${#lines[@]}" 2
	assert_regex "${lines[1]}" "^3 +[0-9]+ "
	HOLDER3=$(awk 'NR == 2 { print $2 }' <<<"$output")
	BEFORE=$(sha "$F")
}

# only_slot_3: $F still has one holder, in slot 3, the same; bytes unchanged.
only_slot_3() {
	run -0 "$LOCKBOX" slots "$F" list
	assert_equal "${#lines[@]}" 2
	assert_regex "${lines[1]}" "^3 +$HOLDER3 "
	assert_equal "$(sha "$F")" "$BEFORE"
}

# bats test_tags=wait
@test "acquire --fd on an fd that holds a slot above MAX takes no second slot and keeps its record" {
	need_ofd
	fd_holding_3
	run -125 --separate-stderr "$LOCKBOX" slots acquire --fd "$FD3" 2
	assert_output ""
	assert_stderr "slots: $F: fd $FD3 holds slot 3 already, above MAX 2; release it first"
	only_slot_3
	# waiting changes nothing: there is nothing to wait for
	run -125 --separate-stderr "$LOCKBOX" slots acquire -w 5s -E 0 --fd "$FD3" 1
	assert_output ""
	assert_stderr "slots: $F: fd $FD3 holds slot 3 already, above MAX 1; release it first"
	only_slot_3
	run -125 --separate-stderr "$LOCKBOX" mutex acquire --fd "$FD3"
	assert_output ""
	assert_stderr "mutex: $F: fd $FD3 holds slot 3 already, not the mutex's slot 1; release it first"
	only_slot_3
	# within MAX it is reported again, as before
	run -0 --separate-stderr "$LOCKBOX" slots acquire --fd "$FD3" 3
	assert_output 3
	only_slot_3
	run -0 "$LOCKBOX" slots release --fd "$FD3"
	run -0 --separate-stderr "$LOCKBOX" slots acquire --fd "$FD3" 2
	assert_output 1
	exec {FD3}>&-
}

# bats test_tags=wait,quick
@test "acquire --fd refuses a write-only fd (9>>F, 9>F) and a read-only one, changing nothing" {
	need_ofd
	local w before
	# a holder, whose record a mistaken acquire would be next to
	start_holder "$F" 3
	before=$(sha "$F")
	exec {w}>>"$F"
	run -125 --separate-stderr "$LOCKBOX" slots acquire --fd "$w" 3
	assert_output ""
	assert_stderr "slots: $F: fd $w is not open for reading and writing; open it with $w<>FILE"
	run -125 --separate-stderr "$LOCKBOX" mutex acquire -w 1s --fd "$w"
	assert_stderr "mutex: $F: fd $w is not open for reading and writing; open it with $w<>FILE"
	exec {w}>&-
	run -0 held "$F"
	assert_output 1
	assert_equal "$(sha "$F")" "$before"
	# 9>F on an empty file: nothing truncated that mattered, and refused too
	: >"$T/empty"
	exec {w}>"$T/empty"
	run -125 --separate-stderr "$LOCKBOX" slots acquire --fd "$w" 3
	assert_stderr "slots: $T/empty: fd $w is not open for reading and writing; open it with $w<>FILE"
	exec {w}>&-
	assert [ ! -s "$T/empty" ]
	exec {w}<"$F"
	run -125 --separate-stderr "$LOCKBOX" slots acquire --fd "$w" 3
	assert_output ""
	assert_stderr "slots: $F: not open for writing"
	exec {w}<&-
	run -0 held "$F"
	assert_output 1
	assert_equal "$(sha "$F")" "$before"
}

# bats test_tags=quick
@test "acquire --fd --path PATH: the fd must be the regular file PATH names" {
	need_ofd
	local fd fd2 rel
	exec {fd}<>"$F"
	# messages then name the file as PATH spells it
	rel=${F#"$T"/}
	cd "$T"
	run -0 --separate-stderr "$LOCKBOX" slots acquire -v --path "$rel" --fd "$fd" 2
	assert_output 1
	assert_stderr "slots: $rel: took slot 1 of 2"
	run -0 "$LOCKBOX" slots release --fd "$fd"
	run -0 --separate-stderr "$LOCKBOX" mutex acquire --fd "$fd" --path "$F"
	assert_output 1
	run -0 "$LOCKBOX" mutex release --fd "$fd"
	# a symlink to the very file is refused: the shell would have followed it
	ln -s "$F" "$T/link"
	run -125 --separate-stderr "$LOCKBOX" mutex acquire --fd "$fd" --path "$T/link"
	assert_output ""
	assert_stderr "mutex: $T/link: is a symbolic link; refusing to follow it"
	# the path now names another file: it was swapped after the shell
	# opened it (by logrotate, by someone who may rename in the
	# directory): not taken, 75, and the caller opens it again
	mv "$F" "$T/old"
	: >"$F"
	run -75 --separate-stderr "$LOCKBOX" slots acquire --fd "$fd" --path "$F" 2
	assert_output ""
	assert_stderr "slots: $F: replaced at its path since it was opened; open it again"
	# --reopen: the caller says it will, and is not told
	run -75 --separate-stderr "$LOCKBOX" mutex acquire --fd "$fd" --path "$F" --reopen
	assert_output ""
	assert_stderr ""
	run -0 held "$T/old"
	assert_output 0
	assert [ ! -s "$F" ]
	run -125 --separate-stderr "$LOCKBOX" slots acquire --fd "$fd" --path "$T/missing" 2
	assert_stderr "slots: $T/missing: No such file or directory"
	# an empty path, or one naming a directory, is refused like a missing one
	run -125 --separate-stderr "$LOCKBOX" slots acquire --fd "$fd" --path "" 2
	assert_stderr "slots: : No such file or directory"
	run -125 --separate-stderr "$LOCKBOX" mutex release --fd "$fd" --path ""
	assert_stderr "mutex: : No such file or directory"
	run -125 --separate-stderr "$LOCKBOX" slots acquire --fd "$fd" --path "$T/" 2
	assert_stderr "slots: $T/: Is a directory"
	mkfifo "$T/fifo"
	run -125 --separate-stderr "$LOCKBOX" slots acquire --fd "$fd" --path "$T/fifo" 2
	assert_stderr "slots: $T/fifo: not a regular file"
	run -0 held "$T/old"
	assert_output 0
	# the fd itself must be a regular file too
	exec {fd2}<>"$T/fifo"
	run -125 --separate-stderr "$LOCKBOX" slots acquire --fd "$fd2" --path "$T/fifo" 2
	assert_stderr "slots: $T/fifo: not a regular file"
	exec {fd}>&- {fd2}>&-
	# --path goes with acquire and release only
	run -125 --separate-stderr "$LOCKBOX" slots --path "$F" "$F" 1 true
	assert_stderr "slots: --path goes with acquire or release --fd
Try 'lockbox slots --help'."
	run -125 --separate-stderr "$LOCKBOX" mutex --path "$F" "$F" check
	assert_stderr "mutex: --path goes with acquire or release --fd
Try 'lockbox mutex --help'."
	# --reopen with acquire --path only
	run -125 --separate-stderr "$LOCKBOX" mutex acquire --reopen --fd 0
	assert_stderr "mutex: --reopen goes with acquire --path
Try 'lockbox mutex --help'."
	run -125 --separate-stderr "$LOCKBOX" mutex release --reopen --path "$F" --fd 0
	assert_stderr "mutex: --reopen goes with acquire --path
Try 'lockbox mutex --help'."
}

# to_full COMMAND...: COMMAND with its stdout on a full disk.
to_full() {
	"$@" >/dev/full
}

# bats test_tags=wait
@test "acquire --fd with stdout on a full disk: 125, and the slot just taken is given back" {
	need_ofd
	local fd
	exec {fd}<>"$F"
	run -125 --separate-stderr to_full "$LOCKBOX" slots acquire --fd "$fd" 2
	assert_stderr "slots: write error: No space left on device"
	run -0 held "$F"
	assert_output 0
	run -125 --separate-stderr to_full "$LOCKBOX" mutex acquire -w 1s --fd "$fd"
	assert_stderr "mutex: write error: No space left on device"
	run -0 held "$F"
	assert_output 0
	# a slot the fd held before the call stays held: only its report failed
	run -0 "$LOCKBOX" slots acquire --fd "$fd" 2
	assert_output 1
	run -125 --separate-stderr to_full "$LOCKBOX" slots acquire --fd "$fd" 2
	assert_stderr "slots: write error: No space left on device"
	run -0 held "$F"
	assert_output 1
	exec {fd}>&-
}
