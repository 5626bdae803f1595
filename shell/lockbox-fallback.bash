# lockbox-fallback.bash: the shell library written in bash, for a bash that cannot load its builtin.
# SPDX-License-Identifier: ISC
# shellcheck shell=bash
#
# lockbox.bash, the file scripts source, loads the library's builtin
# (shell/builtin.c), whose calls are the public functions below. This
# file is what it sources instead when the builtin is absent:
# LOCKBOX_BUILTIN=0, a bash without loadable builtins or of another
# version than the builtin was built for, a build without it (the musl
# build). The same functions, with the same statuses and messages, here
# written in bash, each lock and release a run of the lockbox binary
# ($_lockbox_bin, which the loader resolved).
#
# The shell opens the lock file; the lockbox binary locks the open file
# (an open-file-description lock), so the lock lives exactly as long as this
# shell keeps the fd or until it is released. See lockbox-shell(7).
#
# Public: acquire_mutex, release_mutex, mutex, acquire_slot, release_slot,
# waitfor, and a wrapper for the trap builtin that keeps the release on EXIT
# chained with the script's own EXIT trap. Everything else is _lockbox_*.

# The binary, as the loader resolved it: this file is lockbox.bash's.
_lockbox_bin=${_lockbox_bin:?lockbox-fallback.bash is sourced by lockbox.bash}

# Per lock, keyed by the lock file's absolute path. Plain declare at the top
# level is global when this file is sourced at the top level (declare -g
# needs bash 4.2). An entry is live only while _lockbox_pid[F] is $BASHPID:
# a subshell inherits the arrays but not the ownership.
declare -A _lockbox_fd=()	# F -> the fd this shell opened on F
declare -A _lockbox_pid=()	# F -> $BASHPID of the shell that holds F
declare -A _lockbox_kind=()	# F -> mutex or slots
declare -A _lockbox_slot=()	# F -> the slot number held on F
declare -A _lockbox_depth=()	# F -> how many of the script's functions ran when F was taken
declare -A _lockbox_nested=()	# F -> 1: taken again (changing nothing) by a deeper function
_lockbox_nfd=0			# how many F have an fd (this shell's or a parent's)
_lockbox_slot_file=		# the F that LOCKBOX_SLOT came from
_lockbox_r=			# a function's result (no subshell needed)
_lockbox_quiet=0		# acquire_*'s -q, -w, -s and -v, as _lockbox_acquire_opts read them
_lockbox_wait=
_lockbox_shared=0
_lockbox_verbose=0
_lockbox_warned_sub=0		# the warnings this shell gave, once each
_lockbox_warned_nested=0

# The EXIT trap: _lockbox_exit_pid is the $BASHPID whose real EXIT trap is
# _lockbox_on_exit; _lockbox_exit_cmd is the script's own EXIT command, which
# that handler runs after releasing the locks (_lockbox_exit_set: it has one).
_lockbox_exit_pid=
_lockbox_exit_cmd=
_lockbox_exit_set=0
# An EXIT trap set through the trap wrapper before the first acquire, by
# shell $_lockbox_seen_pid (in a subshell, trap -p still shows the parent's).
_lockbox_seen_pid=
_lockbox_seen_cmd=
_lockbox_seen_set=0

# _lockbox_call FUNCTION [ARG...]: what every public function does: run
# the library's FUNCTION with set -a off, so that nothing the library sets
# is exported to the script's children, then set -a back as it was.
# _lockbox_allexport tells FUNCTION whether it was on (waitfor's COMMAND
# runs with it).
_lockbox_call() {
	if [[ $- != *a* ]]; then
		_lockbox_allexport=0
		"$@"
		return
	fi
	set +a
	_lockbox_allexport=1
	local _lockbox_rc=0
	"$@" || _lockbox_rc=$?
	set -a
	return "$_lockbox_rc"
}

_lockbox_warn() {
	printf '%s\n' "$*" >&2
}

# Status N, for $? in code that runs next.
_lockbox_status() {
	return "$1"
}

# _lockbox_run APPLET ARG...: lockbox APPLET ARG...
_lockbox_run() {
	"$_lockbox_bin" "$@"
}

# _lockbox_r: FILE's key in the state arrays: the physical path of its
# directory (., .. and symlinks resolved) and its base name, so that x.lock,
# ./x.lock and a path through a symlinked directory are one lock. The base
# name is kept as it is: a final symlink is refused when it is opened.
# The builtin's key is shell/locks.c's key_of; this copy stays, for the
# fallback runs where the builtin cannot be loaded: keep the two alike.
_lockbox_key() {
	local path=$1 rest part cur='' dir
	if [[ $path != /* ]]; then
		path=${PWD%/}/$path
	fi
	# without a fork while no directory on the way is a symlink
	rest=${path%/*}/
	while [[ -n $rest ]]; do
		part=${rest%%/*}
		rest=${rest#*/}
		case $part in
		'' | .) ;;
		..) cur=${cur%/*} ;;
		*)
			cur=$cur/$part
			if [[ -L $cur ]]; then
				# bash has no realpath; cd -P in a subshell leaves ours alone
				dir=${path%/*}
				if cur=$(CDPATH='' builtin cd -P -- "${dir:-/}" 2>/dev/null && builtin pwd -P); then
					cur=${cur%/}
				else
					cur=${path%/*}
				fi
				break
			fi
			;;
		esac
	done
	_lockbox_r=$cur/${path##*/}
}

# _lockbox_r: the default lock file, from $LOCKBOX_MUTEX_FILE or the script's name.
_lockbox_default_file() {
	local name dir
	if [[ -n ${LOCKBOX_MUTEX_FILE-} ]]; then
		_lockbox_r=$LOCKBOX_MUTEX_FILE
		return 0
	fi
	name=${0##*/}
	name=${name#-}
	name=${name//[^A-Za-z0-9._-]/_}
	if [[ -z $name || $name == . || $name == .. ]]; then
		name=lockbox
	fi
	if [[ -d /run/lock && -w /run/lock ]]; then
		dir=/run/lock
	elif [[ -n ${XDG_RUNTIME_DIR-} && -d $XDG_RUNTIME_DIR && -w $XDG_RUNTIME_DIR ]]; then
		dir=$XDG_RUNTIME_DIR
	else
		dir=/tmp
	fi
	_lockbox_r=$dir/$name.lock
}

# _lockbox_r: how many of the script's own functions are running (the
# builtin's variable_context): FUNCNAME less the library's frames, those
# of source and the script's main (the one called from line 0).
_lockbox_fdepth() {
	local i n=0
	for ((i = 1; i < ${#FUNCNAME[@]}; i++)); do
		case ${FUNCNAME[i]} in
		_lockbox_* | acquire_mutex | release_mutex | mutex | acquire_slot | release_slot | waitfor | trap | source) ;;
		main) ((BASH_LINENO[i] == 0)) || n=$((n + 1)) ;;
		*) n=$((n + 1)) ;;
		esac
	done
	_lockbox_r=$n
}

# _lockbox_held FILE: whether this shell holds the lock on FILE (the key).
_lockbox_held() {
	[[ -n ${_lockbox_fd[$1]-} && ${_lockbox_pid[$1]-} == "$BASHPID" ]]
}

# _lockbox_find FILE: _lockbox_r is the key of the lock this shell holds
# on FILE: FILE's own key, or that of a held lock whose fd is open on the
# file FILE names under another name (a hard link, a bind mount, a renamed
# directory), so that no spelling of a held file leaves it held. Returns 1,
# with FILE's own key, when this shell holds no lock on it.
_lockbox_find() {
	local file=$1 key k
	_lockbox_key "$file"
	key=$_lockbox_r
	_lockbox_r=$key
	# _lockbox_held, written out: this is every acquire's and release's path
	if [[ -n ${_lockbox_fd[$key]-} && ${_lockbox_pid[$key]-} == "$BASHPID" ]]; then
		return 0
	fi
	if ((_lockbox_nfd > 0)) && [[ -e $file ]]; then
		for k in "${!_lockbox_fd[@]}"; do
			if _lockbox_held "$k" && [[ $file -ef /proc/self/fd/${_lockbox_fd[$k]} ]]; then
				_lockbox_r=$k
				return 0
			fi
		done
	fi
	return 1
}

# _lockbox_open APPLET FILE: _lockbox_r is a new read-write fd on FILE.
# bash never creates the file, nor opens it for writing by its name: `<>`
# would create the target of a dangling symlink put in FILE's place, and
# open a file another user planted. A missing file (or for a pool an
# empty one) is made by the binary (create: O_EXCL, no symlink, the sticky
# directory rule, the header written). bash then opens FILE read-only, which creates nothing,
# and reopens that very open file read-write through /proc/self/fd,
# without looking FILE up again. What is swapped in between, the binary
# refuses: it is given --path FILE and checks that the fd is the regular
# lock file FILE names. A FIFO swapped in just before the read-only open
# would block it; the checks right before leave that window small, and
# only someone who may replace FILE in its directory can do it (in a
# sticky directory, not for a file of this user or the directory's owner).
_lockbox_open() {
	local app=$1 file=$2 ro fd msg
	# a server's URL: the schemes of src/pool/backends.c's table, which the
	# builtin reads (bash cannot); a backend added there is added here
	[[ $file != postgres://* && $file != postgresql://* ]] || { _lockbox_warn "$app: the library takes lock files only, not a server's URL; for a lock on a server, run: lockbox $app URL COMMAND"; return 125; }
	# (an empty file is a pool's to adopt; a mutex takes it as it is:
	# acquire --fd adopts it, or locks it as its holders do)
	if [[ -L $file || ! -e $file || ($app == slots && ! -s $file) ]]; then
		_lockbox_run "$app" -- "$file" create || return
	fi
	if [[ -L $file ]]; then
		_lockbox_warn "$app: $file: is a symbolic link; refusing to follow it"
		return 125
	fi
	if [[ ! -f $file ]]; then
		_lockbox_warn "$app: $file: not a regular file"
		return 125
	fi
	if ! { exec {ro}<"$file"; } 2>/dev/null; then
		# bash's own words for why, without its "script: line N:" prefix
		msg=$(: 2>&1 <"$file") || :
		_lockbox_warn "$app: $file: ${msg##*: }"
		return 125
	fi
	if ! { exec {fd}<>"/proc/self/fd/$ro"; } 2>/dev/null; then
		msg=$(: 2>&1 <>"/proc/self/fd/$ro") || :
		exec {ro}>&-
		_lockbox_warn "$app: $file: ${msg##*: }"
		return 125
	fi
	exec {ro}>&-
	_lockbox_r=$fd
	return 0
}

# _lockbox_close FD
_lockbox_close() {
	local fd=$1
	exec {fd}>&-
}

# _lockbox_try APPLET FILE FD WAIT [MAX]: one try at the slot on FD, open on
# FILE, waiting WAIT (empty: not at all); a FILE replaced at its path is not
# reported (--reopen), as we open it again. _lockbox_r is the slot.
_lockbox_try() {
	local app=$1 file=$2 fd=$3 wait=$4 slot rc=0
	local -a args=("$app" acquire)
	if ((_lockbox_quiet)); then
		args+=(-q)
	fi
	if ((_lockbox_shared)); then
		args+=(-s)
	fi
	if ((_lockbox_verbose)); then
		args+=(-v)
	fi
	if [[ -n $wait ]]; then
		args+=(-w "$wait")
	fi
	args+=(--fd "$fd" --path "$file" --reopen)
	if [[ $app == slots ]]; then
		args+=("$5")
	fi
	# The slot's number comes on stdout. A mutex is always slot 1, so the
	# binary runs as a plain command, with no capture (a command
	# substitution costs another fork); for a slot, exec makes the
	# binary's parent this shell whatever bash does with $(...), so the
	# holder recorded is $BASHPID, as the builtin records it. Messages go
	# straight to stderr.
	if [[ $app == mutex ]]; then
		"$_lockbox_bin" "${args[@]}" >/dev/null || rc=$?
		slot=1
	else
		slot=$(exec "$_lockbox_bin" "${args[@]}") || rc=$?
	fi
	_lockbox_r=$slot
	return "$rc"
}

# _lockbox_acquire APPLET QUIET WAIT FILE [MAX]: take a slot (mutex: the one
# slot, or with _lockbox_shared one shared lock); WAIT is -w's duration, or
# empty not to wait. A file replaced at its path before the lock was had
# (the lock taken on it given back) is opened again, and waited for for the
# rest of -w, as the binary's own runs do: the shell's fd cannot be opened
# again by the binary.
_lockbox_acquire() {
	local app=$1 wait=$3 file=$4 key fd slot rc=0 tries deadline='' left
	_lockbox_quiet=$2
	if _lockbox_find "$file"; then
		key=$_lockbox_r
		# already ours: taking it again changes nothing; but a slot above
		# MAX is not taken twice (the binary's words)
		slot=${_lockbox_slot[$key]}
		if [[ $app == mutex ]] && ((slot != 1)); then
			_lockbox_warn "mutex: $file: fd ${_lockbox_fd[$key]} holds slot $slot already, not the mutex's slot 1; release it first"
			return 125
		fi
		if [[ $app == slots && $5 =~ ^0*[0-9]{1,9}$ ]] && ((10#$5 < slot)); then
			_lockbox_warn "slots: $file: fd ${_lockbox_fd[$key]} holds slot $slot already, above MAX $((10#$5)); release it first"
			return 125
		fi
		_lockbox_fdepth
		if ((_lockbox_r > _lockbox_depth[$key])); then
			_lockbox_nested[$key]=1
		fi
		if [[ $app == slots ]]; then
			LOCKBOX_SLOT=${_lockbox_slot[$key]}
			_lockbox_slot_file=$key
			export LOCKBOX_SLOT
		fi
		return 0
	fi
	key=$_lockbox_r
	# a DUR the binary refuses is refused on the first try, as given
	if [[ -n $wait && $wait != inf && $wait != infinity ]] && _lockbox_duration "$wait" 1000; then
		left=$_lockbox_r
		_lockbox_now
		deadline=$((_lockbox_r + left))
	fi
	# A waiter arms the EXIT trap before it waits, not in the handoff:
	# the script's next command starts as soon as the lock is its own.
	if [[ -n $wait && $_lockbox_exit_pid != "$BASHPID" ]]; then
		_lockbox_arm
	fi
	for ((tries = 1; ; tries++)); do
		_lockbox_open "$app" "$file" || return
		fd=$_lockbox_r
		rc=0
		_lockbox_try "$app" "$file" "$fd" "$wait" "${5-}" || rc=$?
		slot=$_lockbox_r
		if ((rc == 0)); then
			break
		fi
		# replaced at its path: another file is there to lock now
		if ((rc != 75)) || [[ ! -L $file && $file -ef /proc/self/fd/$fd ]]; then
			_lockbox_close "$fd"
			return "$rc"
		fi
		_lockbox_close "$fd"
		# the rest of -w; none left: a few more looks (16, as the builtin)
		if [[ -n $deadline ]]; then
			_lockbox_now
			left=$((deadline - _lockbox_r))
			wait=
			if ((left > 0)); then
				wait=${left}ms
			fi
		fi
		if ((tries >= 16)) && [[ -z $wait ]]; then
			_lockbox_warn "$app: $file: replaced again and again while being locked; giving up"
			return 125
		fi
	done
	if [[ -z $slot || $slot == *[!0-9]* ]]; then
		_lockbox_warn "$app: $file: no slot number from $_lockbox_bin"
		_lockbox_run "$app" release --fd "$fd" 2>/dev/null || :
		_lockbox_close "$fd"
		return 125
	fi
	_lockbox_fd[$key]=$fd
	_lockbox_pid[$key]=$BASHPID
	_lockbox_kind[$key]=$app
	_lockbox_slot[$key]=$slot
	_lockbox_fdepth
	_lockbox_depth[$key]=$_lockbox_r
	_lockbox_nested[$key]=
	_lockbox_nfd=$((_lockbox_nfd + 1))
	if [[ $app == slots ]]; then
		LOCKBOX_SLOT=$slot
		_lockbox_slot_file=$key
		export LOCKBOX_SLOT
	fi
	if [[ $_lockbox_exit_pid != "$BASHPID" ]]; then
		_lockbox_arm
	fi
	# Taken in a subshell that $(...) or a pipeline runs (its stdout a
	# pipe, not the script's own), the lock ends with that subshell, at
	# once: the script never holds it. Said once in this shell. A ( ... )
	# that runs its commands under the lock writes to the script's stdout.
	if [[ $BASHPID != "$$" ]] && ((!_lockbox_warned_sub)) && [[ -p /proc/self/fd/1 ]] &&
		! [[ /proc/self/fd/1 -ef /proc/$$/fd/1 ]]; then
		_lockbox_warned_sub=1
		_lockbox_warn "acquire_${app%s}: $file: taken in a subshell of \$(...) or a pipeline, which releases it as it ends: the script does not hold it"
	fi
	return 0
}

# _lockbox_drop KEY [NAME FILE]: unlock, then close. The explicit unlock
# matters: a background child that inherited the fd shares the open file,
# and closing our copy alone would leave the lock with it. NAME: a release
# the script called (not the EXIT trap's), which says once when it drops
# a lock that an outer caller took and a deeper function took again: that
# caller goes on as if it held it.
_lockbox_drop() {
	local key=$1 fd=${_lockbox_fd[$1]} rc=0
	if [[ -n ${2-} && -n ${_lockbox_nested[$key]-} ]] && ((!_lockbox_warned_nested)); then
		_lockbox_fdepth
		if ((_lockbox_r > _lockbox_depth[$key])); then
			_lockbox_warned_nested=1
			_lockbox_warn "$2: ${3:-$key}: released in a function that took it again, which changed nothing: the caller that took it first holds it no more"
		fi
	fi
	# _lockbox_run and _lockbox_close, written out: every release's path
	"$_lockbox_bin" "${_lockbox_kind[$key]}" release --fd "$fd" || rc=$?
	exec {fd}>&-
	_lockbox_fd[$key]=
	_lockbox_pid[$key]=
	_lockbox_slot[$key]=
	_lockbox_nested[$key]=
	_lockbox_nfd=$((_lockbox_nfd - 1))
	if [[ $_lockbox_slot_file == "$key" ]]; then
		_lockbox_slot_file=
		unset LOCKBOX_SLOT
	fi
	return "$rc"
}

# _lockbox_release KIND [FILE]: FILE's lock, by any of its names, or with
# no FILE every lock of KIND this shell holds. Afterwards this shell holds
# no lock on FILE: not holding it (released already, or a lock of the
# parent shell seen from a subshell) changes nothing and returns 0, so a
# script's own EXIT trap may release what the library's released first.
_lockbox_release() {
	local rc=0 name=release_${1%s}
	if (($# > 1)); then
		if _lockbox_find "$2"; then
			_lockbox_drop "$_lockbox_r" "$name" "$2" || rc=$?
		fi
		return "$rc"
	fi
	local kind=$1 key
	if ((${#_lockbox_fd[@]} == 0)); then
		return 0
	fi
	for key in "${!_lockbox_fd[@]}"; do
		if [[ ${_lockbox_kind[$key]} == "$kind" ]] && _lockbox_held "$key"; then
			_lockbox_drop "$key" "$name" || rc=$?
		fi
	done
	return "$rc"
}

# Every lock this shell holds, mutexes and slots (the EXIT trap does this;
# a script that replaces the EXIT trap with 'builtin trap' can call it).
_lockbox_release_all() {
	local key rc=0
	if ((${#_lockbox_fd[@]} == 0)); then
		return 0
	fi
	for key in "${!_lockbox_fd[@]}"; do
		if _lockbox_held "$key"; then
			_lockbox_drop "$key" || rc=$?
		fi
	done
	return "$rc"
}

# The real EXIT trap once a lock was taken: release, then run the script's
# own EXIT command with $? still the exit status. Releasing first means a
# script command that calls exit, fails under set -e, or hangs cannot keep
# the lock held by a background child. bash exits with the status it had
# before the trap unless the script's command calls exit. The trap passes
# "$@", so the command sees the positional parameters ($1, $#, $@) it
# would see as the trap itself.
_lockbox_on_exit() {
	local _lockbox_rc=$?
	if [[ -n ${_lockbox_guard[1]-} ]]; then
		_lockbox_call _lockbox_release_all || :
	fi
	if ((_lockbox_exit_set)) && [[ -n $_lockbox_exit_cmd ]]; then
		if ((_lockbox_rc == 0)); then
			eval "$_lockbox_exit_cmd"
		else
			_lockbox_status "$_lockbox_rc" || eval "$_lockbox_exit_cmd"
		fi
	fi
}

# _lockbox_trap_cmd: _lockbox_r is the command of the real EXIT trap, or "";
# returns 1 when there is none.
_lockbox_trap_cmd() {
	local p
	local -a words
	p=$(builtin trap -p EXIT)
	if [[ -z $p ]]; then
		_lockbox_r=
		return 1
	fi
	# "trap -- 'CMD' EXIT": bash's own quoting, read back by eval
	eval "words=(${p#trap })"
	_lockbox_r=${words[1]}
	# POSIX mode shows no trap as "trap -- - EXIT", the default action
	if [[ $_lockbox_r == - ]]; then
		_lockbox_r=
		return 1
	fi
}

# Install the EXIT handler in this shell, once, taking over an EXIT trap
# already set: at the top level bash shows the real one; in a subshell it
# shows the parent's, which does not run here, so only a trap this
# subshell set through the wrapper counts.
_lockbox_arm() {
	if [[ $_lockbox_exit_pid == "$BASHPID" ]]; then
		return 0
	fi
	_lockbox_exit_cmd=
	_lockbox_exit_set=0
	if [[ $_lockbox_seen_pid == "$BASHPID" ]]; then
		_lockbox_exit_cmd=$_lockbox_seen_cmd
		_lockbox_exit_set=$_lockbox_seen_set
	elif [[ $BASHPID == "$$" ]] && _lockbox_trap_cmd; then
		_lockbox_exit_cmd=$_lockbox_r
		_lockbox_exit_set=1
	fi
	builtin trap -- '_lockbox_on_exit "$@"' EXIT
	_lockbox_exit_pid=$BASHPID
}

# Whether a trap signal spec names EXIT (bash takes exit in any case, and 0).
_lockbox_is_exit() {
	local s=$1
	[[ ${s^^} == EXIT ]] || [[ $s =~ ^[0-9]+$ && $((10#$s)) -eq 0 ]]
}

# _lockbox_trap_print [SIG...]: trap -p, with the script's own EXIT command
# in place of the library's handler. In a subshell bash still shows the
# parent's traps until one is set, and so does this: $(trap -p) works.
_lockbox_trap_print() {
	local out rc=0 mine="trap -- '_lockbox_on_exit \"\$@\"' EXIT" view='' q="'\\''" sq="'"
	if (($#)); then
		out=$(builtin trap -p "$@") || rc=$?
	else
		out=$(builtin trap -p) || rc=$?
	fi
	if [[ $out == *"$mine"* ]]; then
		if ((_lockbox_exit_set)); then
			view="trap -- '${_lockbox_exit_cmd//$sq/$q}' EXIT"
			out=${out/"$mine"/$view}
		else
			out=${out/"$mine"$'\n'/}
			out=${out/$'\n'"$mine"/}
			out=${out/"$mine"/}
		fi
	fi
	if [[ -n $out ]]; then
		printf '%s\n' "$out"
	fi
	return "$rc"
}

# The trap builtin, except that once this shell's EXIT trap releases locks,
# setting, resetting or printing the EXIT trap acts on the script's own
# command, which the handler runs after the release: a script may set its
# EXIT trap before or after acquiring, and both run. Other signals go
# straight to the builtin. (bash in POSIX mode finds the builtin first.)
_lockbox_trap() {
	local print=0 reset=0 exit_hit=0 action s rc=0
	local -a others=()
	while (($#)); do
		case $1 in
		--)
			shift
			break
			;;
		-p)
			print=1
			shift
			;;
		-?*)
			# shellcheck disable=SC2064 # the caller's own words, passed through
			builtin trap "$@"
			return
			;;
		*)
			break
			;;
		esac
	done
	if ((print)) || (($# == 0)); then
		_lockbox_trap_print "$@"
		return
	fi
	if (($# == 1)); then
		if ! _lockbox_is_exit "$1"; then
			# shellcheck disable=SC2064 # the caller's own word, passed through
			builtin trap "$1"
			return
		fi
		set -- - "$1"
	fi
	action=$1
	shift
	if [[ $action == - ]]; then
		reset=1
	fi
	for s; do
		if _lockbox_is_exit "$s"; then
			exit_hit=1
		else
			others+=("$s")
		fi
	done
	if [[ $_lockbox_exit_pid != "$BASHPID" ]]; then
		# not armed here: the builtin does it all; remember an EXIT trap
		# for _lockbox_arm, since trap -p in a subshell shows the parent's
		# shellcheck disable=SC2064 # the caller's own words, passed through
		builtin trap -- "$action" "$@" || return
		if ((exit_hit)); then
			_lockbox_seen_pid=$BASHPID
			_lockbox_seen_cmd=$action
			_lockbox_seen_set=$((!reset))
			if ((reset)); then
				_lockbox_seen_cmd=
			fi
		fi
		return 0
	fi
	if ((${#others[@]})); then
		builtin trap -- "$action" "${others[@]}" || rc=$?
	fi
	if ((exit_hit)); then
		if ((reset)); then
			_lockbox_exit_cmd=
			_lockbox_exit_set=0
		else
			_lockbox_exit_cmd=$action
			_lockbox_exit_set=1
		fi
	fi
	return "$rc"
}

# _lockbox_acquire_opts NAME USAGE ARG...: mutex(1)'s spellings where they
# make sense, -n -q -s -v -x (-e), bundled too, -w DUR (-wDUR, -qw DUR), and
# their long forms (--wait DUR, --wait=DUR), in _lockbox_quiet,
# _lockbox_wait, _lockbox_shared and _lockbox_verbose; _lockbox_r is how
# many words they took. Nothing else starting with - is a FILE: it is
# refused (125, one line naming USAGE), so that no file is made for an
# option mistyped (-- before a FILE that starts with -).
_lockbox_acquire_opts() {
	local name=$1 usage=$2 n=0 word i c
	shift 2
	_lockbox_quiet=0
	_lockbox_wait=
	_lockbox_shared=0
	_lockbox_verbose=0
	while (($#)); do
		word=$1
		case $word in
		--)
			n=$((n + 1))
			break
			;;
		--exclusive) _lockbox_shared=0 ;;
		--nb | --nonblock | --nonblocking) _lockbox_wait= ;;
		--quiet) _lockbox_quiet=1 ;;
		--shared) _lockbox_shared=1 ;;
		--verbose) _lockbox_verbose=1 ;;
		--wait=* | --timeout=*) _lockbox_wait=${word#*=} ;;
		--wait | --timeout)
			if (($# < 2)); then
				_lockbox_warn "$name: option '$word' needs an argument"
				return 125
			fi
			_lockbox_wait=$2
			shift
			n=$((n + 1))
			;;
		--?*)
			_lockbox_warn "$name: invalid option '$word'; usage: $usage"
			return 125
			;;
		-?*)
			for ((i = 1; i < ${#word}; i++)); do
				c=${word:i:1}
				case $c in
				e | x) _lockbox_shared=0 ;;
				n) _lockbox_wait= ;;
				q) _lockbox_quiet=1 ;;
				s) _lockbox_shared=1 ;;
				v) _lockbox_verbose=1 ;;
				w)
					# its value: the rest of the word, else the next one
					if ((i + 1 < ${#word})); then
						_lockbox_wait=${word:i+1}
					elif (($# < 2)); then
						_lockbox_warn "$name: option '-w' needs an argument"
						return 125
					else
						_lockbox_wait=$2
						shift
						n=$((n + 1))
					fi
					break
					;;
				*)
					_lockbox_warn "$name: invalid option '-$c'; usage: $usage"
					return 125
					;;
				esac
			done
			;;
		*) break ;;
		esac
		shift
		n=$((n + 1))
	done
	_lockbox_r=$n
}

# acquire_mutex [-nqsvx] [-w DUR] [FILE]: take the exclusive lock on FILE
# (-s, --shared: a shared one, which other shared holders may hold too); 75
# (and the holder named on stderr, unless -q) when it is held. With -w the
# binary waits up to DUR for it, blocked in the kernel (bare number: seconds).
_lockbox_acquire_mutex() {
	local quiet wait
	_lockbox_acquire_opts acquire_mutex 'acquire_mutex [-nqsvx] [-w DUR] [FILE]' "$@" || return
	shift "$_lockbox_r"
	quiet=$_lockbox_quiet
	wait=$_lockbox_wait
	if (($# > 1)); then
		_lockbox_warn "acquire_mutex: unexpected argument '$2'"
		return 125
	fi
	if (($# == 0)); then
		_lockbox_default_file
		set -- "$_lockbox_r"
	fi
	_lockbox_acquire mutex "$quiet" "$wait" "$1"
}

# _lockbox_release_args NAME [--] [FILE]: release_mutex's and release_slot's
# words; _lockbox_r is how many to shift (an option: none is taken, and
# none names a file, 125).
_lockbox_release_args() {
	local name=$1 n=0
	shift
	if [[ ${1-} == -- ]]; then
		n=1
		shift
	elif [[ ${1-} == -?* ]]; then
		_lockbox_warn "$name: invalid option '$1'; usage: $name [FILE]"
		return 125
	fi
	if (($# > 1)); then
		_lockbox_warn "$name: unexpected argument '$2'"
		return 125
	fi
	_lockbox_r=$n
}

# release_mutex [FILE]: drop FILE's lock, or with no FILE every mutex this shell holds.
_lockbox_release_mutex() {
	_lockbox_release_args release_mutex "$@" || return
	shift "$_lockbox_r"
	_lockbox_release mutex "$@"
}

# mutex acquire [-nqsvx] [-w DUR] [FILE] | mutex release [FILE]: the seed's
# spelling. Every other form is the program's (mutex FILE list|check,
# mutex [-w DUR] FILE COMMAND..., mutex acquire|release --fd FD), which
# this function would otherwise hide in a script that sources the library.
_lockbox_mutex() {
	local op=${1-} a
	case $op in
	acquire | release)
		# acquire --fd FD and release --fd FD are the binary's
		for a in "${@:2}"; do
			case $a in
			--fd | --fd=*)
				_lockbox_run mutex "$@"
				return
				;;
			esac
		done
		shift
		if [[ $op == acquire ]]; then
			_lockbox_acquire_mutex "$@"
		else
			_lockbox_release_mutex "$@"
		fi
		;;
	*)
		"$_lockbox_bin" mutex "$@"
		;;
	esac
}

# acquire_slot [-nqv] [-w DUR] FILE MAX: take one of MAX slots; sets and
# exports LOCKBOX_SLOT (1..MAX). 75 when all are busy (after DUR with -w).
_lockbox_acquire_slot() {
	local quiet wait usage='acquire_slot [-nqv] [-w DUR] FILE MAX'
	_lockbox_acquire_opts acquire_slot "$usage" "$@" || return
	shift "$_lockbox_r"
	quiet=$_lockbox_quiet
	wait=$_lockbox_wait
	if ((_lockbox_shared)); then
		_lockbox_warn "acquire_slot: -s goes with acquire_mutex: a slot is never shared"
		return 125
	fi
	if (($# != 2)); then
		_lockbox_warn "acquire_slot: usage: $usage"
		return 125
	fi
	_lockbox_acquire slots "$quiet" "$wait" "$1" "$2"
}

# release_slot [FILE]: drop FILE's slot, or with no FILE every slot this shell holds.
_lockbox_release_slot() {
	_lockbox_release_args release_slot "$@" || return
	shift "$_lockbox_r"
	_lockbox_release slots "$@"
}

# waitfor's own functions: _lockbox_waitfor and its helpers
# shellcheck source-path=SCRIPTDIR source=lockbox-fallback-waitfor.bash
. "${BASH_SOURCE[0]%/*}/lockbox-fallback-waitfor.bash" || return

# The public functions. Each first checks that this shell did the set-up
# (the guard array, which no environment can carry): copies inherited from
# a parent through export -f or set -a, without the state arrays, refuse
# with 125 rather than fail on an expansion or skip the lock.
acquire_mutex() {
	if [[ -z ${_lockbox_guard[1]-} ]]; then
		printf 'acquire_mutex: %s\n' 'lockbox.bash was not sourced in this shell (a function inherited from the environment?); source it' >&2
		return 125
	fi
	# the common call, a FILE and no option, without set -a to undo: the
	# short way (every function call costs a shell some microseconds)
	if (($# == 1)) && [[ $1 != -* && $- != *a* ]]; then
		_lockbox_allexport=0
		_lockbox_shared=0
		_lockbox_verbose=0
		_lockbox_acquire mutex 0 '' "$1"
		return
	fi
	_lockbox_call _lockbox_acquire_mutex "$@"
}

release_mutex() {
	if [[ -z ${_lockbox_guard[1]-} ]]; then
		printf 'release_mutex: %s\n' 'lockbox.bash was not sourced in this shell (a function inherited from the environment?); source it' >&2
		return 125
	fi
	if (($# == 1)) && [[ $1 != -?* && $- != *a* ]]; then
		_lockbox_allexport=0
		_lockbox_release mutex "$1"
		return
	fi
	_lockbox_call _lockbox_release_mutex "$@"
}

mutex() {
	if [[ -z ${_lockbox_guard[1]-} ]]; then
		printf 'mutex: %s\n' 'lockbox.bash was not sourced in this shell (a function inherited from the environment?); source it' >&2
		return 125
	fi
	_lockbox_call _lockbox_mutex "$@"
}

acquire_slot() {
	if [[ -z ${_lockbox_guard[1]-} ]]; then
		printf 'acquire_slot: %s\n' 'lockbox.bash was not sourced in this shell (a function inherited from the environment?); source it' >&2
		return 125
	fi
	_lockbox_call _lockbox_acquire_slot "$@"
}

release_slot() {
	if [[ -z ${_lockbox_guard[1]-} ]]; then
		printf 'release_slot: %s\n' 'lockbox.bash was not sourced in this shell (a function inherited from the environment?); source it' >&2
		return 125
	fi
	_lockbox_call _lockbox_release_slot "$@"
}

waitfor() {
	if [[ -z ${_lockbox_guard[1]-} ]]; then
		printf 'waitfor: %s\n' 'lockbox.bash was not sourced in this shell (a function inherited from the environment?); source it' >&2
		return 125
	fi
	_lockbox_call _lockbox_waitfor "$@"
}

# An inherited copy of this wrapper is the plain builtin. In POSIX mode
# (set -o posix, bash run as sh) a function may not be named after a
# special builtin, and bash would end the script at this definition: there
# the builtin stays, as it would be found before a function anyway, and the
# library's handler releases on EXIT unless the script sets its own EXIT
# trap after the first acquire (see lockbox-shell(7)).
if ! shopt -qo posix; then
	trap() {
		if [[ -z ${_lockbox_guard[1]-} ]]; then
			# shellcheck disable=SC2064 # the caller's own words, passed through
			builtin trap "$@"
			return
		fi
		_lockbox_call _lockbox_trap "$@"
	}
fi

# Set up. A copy of one of our names that came exported from the
# environment stays exported when redefined: none is, afterwards.
declare -a _lockbox_guard=(lockbox "$BASHPID")
# (compgen may be missing from a bash built without completion: an empty list)
mapfile -t _lockbox_names <<<"$(compgen -A function _lockbox_ 2>/dev/null)"
for _lockbox_r in acquire_mutex release_mutex mutex acquire_slot release_slot waitfor trap \
	"${_lockbox_names[@]}"; do
	# (no trap function in POSIX mode; export is a special builtin there, fatal if it fails)
	if [[ -n $_lockbox_r ]] && declare -F "$_lockbox_r" >/dev/null; then
		export -n -f "${_lockbox_r?}"
	fi
done
unset _lockbox_names
_lockbox_r=
export -n "${!_lockbox_@}"
if ((_lockbox_allexport)); then
	set -a
fi
