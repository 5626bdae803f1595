# lockbox.bash: mutexes, slots and waitfor for bash scripts, on lockbox's kernel-held locks.
# SPDX-License-Identifier: ISC
# shellcheck shell=bash
#
# Source it at the top level of a script (not from inside a function: its
# state is global), with bash 4.1 or later:
#
#     . "$(lockbox --shell-lib)"
#     acquire_mutex /run/lock/nightly.lock || exit 0
#
# This file only loads the library. Its calls (acquire_mutex,
# release_mutex, mutex, acquire_slot, release_slot, waitfor, and trap,
# which keeps the release on EXIT chained with the script's own EXIT
# trap) are bash builtins (enable -f, shell/builtin.c): each is one call
# that locks and unlocks inside this shell, without a process. Where the
# builtin does not load (LOCKBOX_BUILTIN=0, a bash without loadable
# builtins or of another version, a build without it) the same calls are
# bash functions, from lockbox-fallback.bash, which run the lockbox
# binary. The shell's fd on the lock file holds the lock (an
# open-file-description lock), so the lock lives exactly as long as this
# shell keeps the fd or until it is released. See lockbox-shell(7).

# Sourced by another shell (dash, a POSIX sh), the bash syntax below would
# fail line by line and leave the script running without the functions: say
# so in words every sh reads, and stop here.
if [ -z "${BASH_VERSION-}" ]; then
	printf '%s\n' 'lockbox.bash: needs bash 4.1 or later; this shell is not bash' >&2
	return 125
fi
# The load guard is an array: bash never exports arrays, so a child shell
# that inherits exported copies of our functions or variables (set -a or
# export -f in a parent) never sees it set and does the set-up itself.
if [[ -n ${_lockbox_guard[1]-} ]]; then
	return 0
fi
if ((BASH_VERSINFO[0] < 4 || (BASH_VERSINFO[0] == 4 && BASH_VERSINFO[1] < 1))); then
	printf 'lockbox.bash: needs bash 4.1 or later, this is %s\n' "$BASH_VERSION" >&2
	return 125
fi
# Nothing of the library is exported: set -a is off while it is set up
# (and in the fallback, while its functions run); restored at the end.
_lockbox_allexport=0
if [[ $- == *a* ]]; then
	_lockbox_allexport=1
	set +a
fi

# The binary this copy belongs to: make writes its absolute path here in
# the installed copy and in the build tree's, which is what
# 'lockbox --shell-lib' prints; it is empty in the source tree.
_lockbox_built=''
# Its loadable builtin, the same way (empty: built without one), and the
# runtime it needs loaded first, if any (a sanitizer build's).
_lockbox_builtin_so=''
_lockbox_builtin_needs=''
# The bash functions, for a shell that does not load the builtin (empty:
# beside this file).
_lockbox_fallback=''

# The binary, resolved once: a later change of PATH or LOCKBOX does not
# matter. $LOCKBOX, else the one this copy belongs to, else lockbox from PATH.
if [[ -n ${LOCKBOX-} ]]; then
	_lockbox_bin=$LOCKBOX
elif [[ -n $_lockbox_built ]]; then
	_lockbox_bin=$_lockbox_built
else
	_lockbox_bin=lockbox
fi
if [[ $_lockbox_bin != */* ]]; then
	_lockbox_bin=$(type -P "$_lockbox_bin") || _lockbox_bin=
fi
if [[ -z $_lockbox_bin || ! -x $_lockbox_bin ]]; then
	printf 'lockbox.bash: cannot find the lockbox binary (%s)\n' "${LOCKBOX:-${_lockbox_built:-lockbox}}" >&2
	if ((_lockbox_allexport)); then
		set -a
	fi
	return 125
fi

# The builtin, unless LOCKBOX_BUILTIN=0. A builtin built with a
# sanitizer loads only into a bash that has its runtime. A bash that
# refuses it (no loadable builtins, another version) says nothing here:
# the functions take its place.
_lockbox_inshell=0
if [[ ${LOCKBOX_BUILTIN-} != 0 && -n $_lockbox_builtin_so && -f $_lockbox_builtin_so ]]; then
	_lockbox_r=
	if [[ -n $_lockbox_builtin_needs ]]; then
		read -r -d '' _lockbox_r </proc/self/maps || :
	fi
	if [[ -z $_lockbox_builtin_needs || $_lockbox_r == *"/$_lockbox_builtin_needs"* ]] &&
		builtin enable -f "$_lockbox_builtin_so" _lockbox_builtin acquire_mutex release_mutex \
			mutex acquire_slot release_slot waitfor trap 2>/dev/null; then
		_lockbox_inshell=1
	fi
	unset _lockbox_r
fi
if ((_lockbox_inshell)); then
	declare -a _lockbox_guard=(lockbox "$BASHPID")
	export -n "${!_lockbox_@}"
	if ((_lockbox_allexport)); then
		set -a
	fi
	return 0
fi
if [[ -z $_lockbox_fallback ]]; then
	_lockbox_fallback=.
	if [[ ${BASH_SOURCE[0]} == */* ]]; then
		_lockbox_fallback=${BASH_SOURCE[0]%/*}
	fi
	_lockbox_fallback=$_lockbox_fallback/lockbox-fallback.bash
fi
# shellcheck source-path=SCRIPTDIR source=lockbox-fallback.bash
. "$_lockbox_fallback"
