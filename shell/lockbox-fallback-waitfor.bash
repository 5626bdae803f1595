# lockbox-fallback-waitfor.bash: waitfor written in bash, for the fallback (lockbox-fallback.bash sources it).
# SPDX-License-Identifier: ISC
# shellcheck shell=bash
#
# The library's waitfor runs COMMAND in the shell, so that a function
# retried keeps what it does (waitfor 3 5 mutex acquire keeps the lock).
# These are the fallback's: with the builtin, shell/retry.c does the
# same. Its messages and statuses are the waitfor applet's.

# _lockbox_now: _lockbox_r is a monotonic time in ms (the boot clock from
# /proc/uptime, in centiseconds; $SECONDS where there is no /proc).
_lockbox_now() {
	local up rest
	if { read -r up rest </proc/uptime; } 2>/dev/null && [[ $up =~ ^([0-9]+)\.([0-9]{2})$ ]]; then
		_lockbox_r=$((10#${BASH_REMATCH[1]} * 1000 + 10#${BASH_REMATCH[2]} * 10))
	else
		_lockbox_r=$((SECONDS * 1000))
	fi
}

# _lockbox_duration TEXT BARE_MS: _lockbox_r is TEXT in ms, by lockbox's
# grammar (terms NUMBER[UNIT], NUMBER with an optional fraction, units ms,
# s or sec, m or min, h or hr, d; a bare number only alone, in BARE_MS
# units). 1 if malformed, 2 if too long. The builtin has no copy of the
# grammar: it reads durations with lockbox's own parser (src/util/parse.c).
# This one stays, as do _lockbox_fmt_ms's of lb_format_duration and
# _lockbox_fmt_given's of lb_format_duration_ms: the fallback runs where
# the builtin cannot be loaded.
_lockbox_duration() {
	local s=$1 bare=$2 total=0 whole frac unit term n=0
	local max=$((100 * 366 * 86400 * 1000))
	if [[ -z $s ]]; then
		return 1
	fi
	while [[ -n $s ]]; do
		if [[ ! $s =~ ^([0-9]*)(\.([0-9]*))?(ms|min|sec|hr|s|m|h|d)?(.*)$ ]]; then
			return 1
		fi
		whole=${BASH_REMATCH[1]}
		frac=${BASH_REMATCH[3]}
		unit=${BASH_REMATCH[4]}
		s=${BASH_REMATCH[5]}
		if [[ -z $whole$frac ]]; then
			return 1
		fi
		case $unit in
		ms) unit=1 ;;
		s | sec) unit=1000 ;;
		m | min) unit=60000 ;;
		h | hr) unit=3600000 ;;
		d) unit=86400000 ;;
		*)
			if [[ -n $s ]] || ((n > 0)); then
				return 1
			fi
			unit=$bare
			;;
		esac
		# leading zeros off; anything longer than the maximum in ms is too long
		[[ $whole =~ ^0*([0-9]*)$ ]]
		whole=${BASH_REMATCH[1]:-0}
		if ((${#whole} > 13 || whole > max / unit)); then
			return 2
		fi
		term=$((whole * unit))
		# the fraction, to the ms (finer is dropped)
		frac=${frac:0:9}
		if [[ -n $frac ]]; then
			term=$((term + 10#$frac * unit / 10 ** ${#frac}))
		fi
		total=$((total + term))
		if ((term > max || total > max)); then
			return 2
		fi
		n=$((n + 1))
	done
	_lockbox_r=$total
}

# _lockbox_fmt_ms MS: _lockbox_r is lockbox's human duration ("850ms", "3m12s").
_lockbox_fmt_ms() {
	local ms=$1 sec i
	local -a names=(d h m s) secs=(86400 3600 60 1)
	if ((ms < 1000)); then
		_lockbox_r=${ms}ms
		return 0
	fi
	sec=$((ms / 1000))
	for ((i = 0; i < 3 && sec < secs[i]; i++)); do
		:
	done
	if ((i == 3 || sec % secs[i] == 0)); then
		_lockbox_r=$((sec / secs[i]))${names[i]}
	else
		_lockbox_r=$((sec / secs[i]))${names[i]}$((sec % secs[i] / secs[i + 1]))${names[i + 1]}
	fi
}

# _lockbox_fmt_given MS: the same, but a duration under a minute keeps its
# milliseconds ("1.5s"): a duration the caller gave, said back as given.
_lockbox_fmt_given() {
	local ms=$(($1 % 1000))
	if (($1 < 1000 || $1 >= 60000 || ms == 0)); then
		_lockbox_fmt_ms "$1"
		return 0
	fi
	printf -v ms '%03d' "$ms"
	while [[ $ms == *0 ]]; do
		ms=${ms%0}
	done
	_lockbox_r=$(($1 / 1000)).${ms}s
}

_lockbox_waitfor_usage() {
	_lockbox_warn "waitfor: $1"
	_lockbox_warn "Try 'lockbox waitfor --help'."
	return 125
}

# _lockbox_waitfor_time WHAT TEXT BARE_MS EXAMPLE: _lockbox_r is TEXT in ms,
# or a usage error (the applet's words) with status 125.
_lockbox_waitfor_time() {
	_lockbox_duration "$2" "$3" && return 0
	if (($? == 2)); then
		_lockbox_waitfor_usage "invalid $1 '$2': longer than 36600d"
	else
		_lockbox_waitfor_usage "invalid $1 '$2': expected a duration like $4"
	fi
}

# waitfor [-qv] [--retry-on LIST] TIMEOUT INTERVAL [--] COMMAND [ARG...]:
# lockbox's waitfor(1), but COMMAND runs in this shell, so it can be a
# function that changes the shell (waitfor 3 5 mutex acquire keeps the lock).
# COMMAND sees the caller's variables: bash's locals are dynamically scoped,
# so every local here has the library's prefix, and a function retried that
# reads or sets n, list or timeout reads and sets the caller's own.
_lockbox_waitfor() {
	local _lockbox_wf_quiet=0 _lockbox_wf_verbose=0 _lockbox_wf_listed=0 _lockbox_wf_list=''
	local _lockbox_wf_timeout _lockbox_wf_interval _lockbox_wf_deadline _lockbox_wf_wake
	local _lockbox_wf_left _lockbox_wf_rc _lockbox_wf_n _lockbox_wf_s _lockbox_wf_i _lockbox_wf_what
	local -A _lockbox_wf_retry=()
	# COMMAND runs with the caller's set -a, which _lockbox_call turned off
	# shellcheck disable=SC2154 # _lockbox_allexport: lockbox-fallback.bash's
	local _lockbox_wf_allexport=$_lockbox_allexport
	while (($#)); do
		case $1 in
		--)
			shift
			break
			;;
		-h | --help)
			printf '%s\n' "usage: waitfor [-qv] [--retry-on LIST] TIMEOUT INTERVAL [--] COMMAND [ARG...]" \
				"" \
				"Run COMMAND (a shell function too, in this shell) until it succeeds: again" \
				"after INTERVAL each time it fails, for at most TIMEOUT. A bare TIMEOUT is" \
				"minutes (3 = 3 minutes), a bare INTERVAL seconds (5 = 5 seconds); units" \
				"ms, s or sec, m or min, h or hr, d. See lockbox-shell(7)."
			return 0
			;;
		-V | --version)
			# shellcheck disable=SC2154 # _lockbox_bin: lockbox.bash's
			"$_lockbox_bin" --version
			return
			;;
		--quiet) _lockbox_wf_quiet=1 ;;
		--verbose) _lockbox_wf_verbose=1 ;;
		--retry-on)
			if (($# < 2)); then
				_lockbox_waitfor_usage "option '--retry-on' needs an argument"
				return
			fi
			_lockbox_wf_listed=1
			_lockbox_wf_list=$2
			shift
			;;
		--retry-on=*)
			_lockbox_wf_listed=1
			_lockbox_wf_list=${1#--retry-on=}
			;;
		--?*)
			_lockbox_waitfor_usage "invalid option '$1'"
			return
			;;
		-?*)
			# bundled letters: -qv
			for ((_lockbox_wf_i = 1; _lockbox_wf_i < ${#1}; _lockbox_wf_i++)); do
				case ${1:_lockbox_wf_i:1} in
				q) _lockbox_wf_quiet=1 ;;
				v) _lockbox_wf_verbose=1 ;;
				V)
					# shellcheck disable=SC2154 # _lockbox_bin: lockbox.bash's
					"$_lockbox_bin" --version
					return
					;;
				*)
					_lockbox_waitfor_usage "invalid option '-${1:_lockbox_wf_i:1}'"
					return
					;;
				esac
			done
			;;
		*) break ;;
		esac
		shift
	done
	if ((_lockbox_wf_listed)); then
		if [[ ! $_lockbox_wf_list =~ ^[0-9]{1,7}(,[0-9]{1,7})*$ ]]; then
			_lockbox_waitfor_usage "invalid --retry-on list '$_lockbox_wf_list': expected statuses 0 to 255, comma-separated"
			return
		fi
		for _lockbox_wf_s in ${_lockbox_wf_list//,/ }; do
			if ((10#$_lockbox_wf_s > 255)); then
				_lockbox_waitfor_usage "invalid --retry-on list '$_lockbox_wf_list': expected statuses 0 to 255, comma-separated"
				return
			fi
			_lockbox_wf_retry[$((10#$_lockbox_wf_s))]=1
		done
	fi
	if (($# == 0)); then
		_lockbox_waitfor_usage "missing TIMEOUT"
		return
	fi
	_lockbox_waitfor_time TIMEOUT "$1" 60000 "3 (minutes), 90s or 1h30m" || return
	_lockbox_wf_timeout=$_lockbox_r
	# the seed's minutes are a surprise where seconds are the rule: -v says so
	if ((_lockbox_wf_verbose)) && [[ $1 =~ ^([0-9]+\.?[0-9]*|\.[0-9]+)$ && $1 == *[1-9]* ]]; then
		_lockbox_warn "waitfor: TIMEOUT $1 = $1 minutes (a bare number here is minutes; ${1}s is seconds)"
	fi
	shift
	if (($# == 0)); then
		_lockbox_waitfor_usage "missing INTERVAL"
		return
	fi
	_lockbox_waitfor_time INTERVAL "$1" 1000 "5 (seconds), 500ms or 1m" || return
	_lockbox_wf_interval=$_lockbox_r
	shift
	if [[ ${1-} == -- ]]; then
		shift
	fi
	if (($# == 0)); then
		_lockbox_waitfor_usage "missing COMMAND"
		return
	fi
	# as the applet: a command that cannot run is not retried
	if [[ $1 == */* ]]; then
		if [[ ! -e $1 ]]; then
			_lockbox_warn "waitfor: cannot run '$1': No such file or directory"
			return 127
		fi
		if [[ -d $1 || ! -x $1 ]]; then
			_lockbox_warn "waitfor: cannot run '$1': Permission denied"
			return 126
		fi
	elif ! type -t -- "$1" >/dev/null 2>&1; then
		_lockbox_warn "waitfor: cannot run '$1': No such file or directory"
		return 127
	fi
	_lockbox_now
	# the clock ticks in 10ms: one tick more, so TIMEOUT has surely passed
	# before giving up; a TIMEOUT of 0 is one attempt, never a second
	_lockbox_wf_deadline=$((_lockbox_r + _lockbox_wf_timeout + 10))
	for ((_lockbox_wf_n = 1; ; _lockbox_wf_n++)); do
		_lockbox_wf_rc=0
		if ((_lockbox_wf_allexport)); then
			set -a
			"$@" || _lockbox_wf_rc=$?
			set +a
		else
			"$@" || _lockbox_wf_rc=$?
		fi
		if ((_lockbox_wf_rc == 0)); then
			if ((_lockbox_wf_verbose)); then
				_lockbox_warn "waitfor: attempt $_lockbox_wf_n succeeded"
			fi
			return 0
		fi
		_lockbox_wf_what="exited $_lockbox_wf_rc"
		# without a list, every failure is retried but 125 (a usage error,
		# lockbox's own failure), 126 and 127 (cannot run): they say the
		# command cannot succeed
		if ((_lockbox_wf_listed)) && [[ -z ${_lockbox_wf_retry[$_lockbox_wf_rc]-} ]]; then
			if ((_lockbox_wf_verbose)); then
				_lockbox_warn "waitfor: attempt $_lockbox_wf_n $_lockbox_wf_what; not a --retry-on status, stopping"
			fi
			return "$_lockbox_wf_rc"
		fi
		if ((!_lockbox_wf_listed && _lockbox_wf_rc >= 125 && _lockbox_wf_rc <= 127)); then
			if ((_lockbox_wf_verbose)); then
				_lockbox_warn "waitfor: attempt $_lockbox_wf_n $_lockbox_wf_what; 125, 126 and 127 are retried only when --retry-on names them, stopping"
			fi
			return "$_lockbox_wf_rc"
		fi
		_lockbox_now
		_lockbox_wf_left=$((_lockbox_wf_deadline - _lockbox_r))
		if ((_lockbox_wf_timeout == 0 || _lockbox_wf_left <= 0)); then
			if ((_lockbox_wf_verbose)); then
				_lockbox_warn "waitfor: attempt $_lockbox_wf_n $_lockbox_wf_what; out of time"
			fi
			if ((!_lockbox_wf_quiet)); then
				_lockbox_fmt_given "$_lockbox_wf_timeout"
				_lockbox_wf_s=s
				if ((_lockbox_wf_n == 1)); then
					_lockbox_wf_s=
				fi
				_lockbox_warn "waitfor: gave up after $_lockbox_r ($_lockbox_wf_n attempt$_lockbox_wf_s); last status $_lockbox_wf_rc"
			fi
			return "$_lockbox_wf_rc"
		fi
		_lockbox_wf_wake=$_lockbox_wf_interval
		if ((_lockbox_wf_wake > _lockbox_wf_left)); then
			_lockbox_wf_wake=$_lockbox_wf_left
		fi
		if ((_lockbox_wf_verbose)); then
			_lockbox_fmt_ms "$_lockbox_wf_wake"
			_lockbox_warn "waitfor: attempt $_lockbox_wf_n $_lockbox_wf_what; next in $_lockbox_r"
		fi
		if ((_lockbox_wf_wake > 0)); then
			printf -v _lockbox_wf_s '%d.%03d' $((_lockbox_wf_wake / 1000)) $((_lockbox_wf_wake % 1000))
			sleep "$_lockbox_wf_s" || return
		fi
	done
}
