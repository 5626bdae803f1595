# SPDX-License-Identifier: ISC
# shellcheck shell=bash
# bash completion for lockbox and its applets (slots, mutex, waitfor,
# adaptive; and lockbox locks, which has no link). Options come from each applet's own --help, so they follow
# the binary; adaptive's atom names come from 'adaptive status'.
# Works with the bash-completion framework, and without it.

# The options of an applet, "NAME ARG" per line (ARG empty when none),
# read from its --help once per shell: _lockbox_opts BIN APPLET
declare -gA _lockbox_optcache=()
_lockbox_opts() {
	local bin=$1 applet=$2 line word next i
	local -a words
	if [[ -z ${_lockbox_optcache[$applet]+set} ]]; then
		local out=
		while IFS= read -r line; do
			# option lines: "  -w, --wait DUR  text", "  -F, --json, --fd FD, ...";
			# every spelling on them, in the text too ("...; --syslog: ...")
			[[ $line =~ ^\ +-[-a-zA-Z] ]] || continue
			read -ra words <<<"${line//[,;:()]/ }"
			for ((i = 0; i < ${#words[@]}; i++)); do
				word=${words[i]}
				[[ $word =~ ^--?[a-zA-Z][-a-zA-Z]*$ ]] || continue
				next=${words[i + 1]:-}
				# an argument is an upper-case word right after a spelling
				[[ $next =~ ^[A-Z]+$ ]] || next=
				out+="$word ${next}"$'\n'
			done
		done < <("$bin" "$applet" --help 2>/dev/null)
		# a spelling shares the argument of the last one on its line
		_lockbox_optcache[$applet]=$(_lockbox_fill_args <<<"$out")
	fi
	printf '%s\n' "${_lockbox_optcache[$applet]}"
}

# "-w " followed by "--wait DUR" on one help line: -w takes DUR too. A
# spelling named again (in another option's text) is listed once.
_lockbox_fill_args() {
	local -a names=() args=()
	local -A seen=()
	local name arg i j
	while read -r name arg; do
		[[ -n $name ]] || continue
		names+=("$name")
		args+=("$arg")
	done
	for ((i = ${#names[@]} - 1; i >= 0; i--)); do
		if [[ ${names[i]} != --* && -z ${args[i]} ]]; then
			j=$((i + 1))
			[[ $j -lt ${#names[@]} && ${names[j]} == --* ]] && args[i]=${args[j]}
		fi
	done
	for ((i = 0; i < ${#names[@]}; i++)); do
		[[ -z ${seen[${names[i]}]+set} ]] || continue
		seen[${names[i]}]=1
		printf '%s %s\n' "${names[i]}" "${args[i]}"
	done
}

# COMPREPLY gets the words of the list $2 (one a line) that start with $1.
_lockbox_add() {
	local cur=$1 w
	while IFS= read -r w; do
		[[ -n $w && $w == "$cur"* ]] && COMPREPLY+=("$w")
	done <<<"$2"
}

_lockbox_files() {	# _lockbox_files CUR [-d]
	if declare -F _filedir >/dev/null; then
		if [[ ${2:-} == -d ]]; then _filedir -d; else _filedir; fi
	else
		compopt -o filenames 2>/dev/null
		local f
		while IFS= read -r f; do
			COMPREPLY+=("$f")
		done < <(compgen "${2:--f}" -- "$1")
	fi
}

# Atom names of adaptive's state directory (-d DIR if one was given),
# less those already on the line (the words after the first SKIP).
_lockbox_atoms() {	# _lockbox_atoms BIN CUR [DIR [WORD...]]
	local bin=$1 cur=$2 dir=${3:-} names n q w
	shift 3 2>/dev/null || shift $#
	local -a d=()
	[[ -n $dir ]] && d=(-d "$dir")
	names=$("$bin" adaptive "${d[@]}" status 2>/dev/null | sed -n 's/^\([^ ].*\)$/\1/p')
	while IFS= read -r n; do
		[[ -n $n && $n == "$cur"* ]] || continue
		q=$(printf '%q' "$n")
		for w in "$@"; do
			[[ $w == "$n" || $w == "$q" ]] && continue 2
		done
		COMPREPLY+=("$q")
	done <<<"$names"
}

# The words as typed: bash splits "edit:/etc/motd" or "postgresql://h/db"
# at the characters of COMP_WORDBREAKS; words[] joins what no blank
# separates on the line, cword is the cursor's, wstart[k] the index in
# COMP_WORDS where word k begins.
_lockbox() {
	COMPREPLY=()
	local -a words=() wstart=()
	local cword=0 line=${COMP_LINE:-} at=0 k=-1 i gap frag
	for ((i = 0; i < ${#COMP_WORDS[@]}; i++)); do
		frag=${COMP_WORDS[i]}
		gap=0
		while [[ ${line:at:1} == [[:blank:]] ]]; do
			at=$((at + 1))
			gap=1
		done
		if [[ ${line:at:${#frag}} != "$frag" ]]; then
			# the line does not match the words: take them as bash split them
			words=("${COMP_WORDS[@]}")
			wstart=("${!COMP_WORDS[@]}")
			cword=$COMP_CWORD
			break
		fi
		at=$((at + ${#frag}))
		if ((k < 0 || gap)); then
			k=$((k + 1))
			words[k]=$frag
			wstart[k]=$i
		else
			words[k]+=$frag
		fi
		((i == COMP_CWORD)) && cword=$k
	done
	_lockbox_main
	# the completions replace the cursor's piece of the word only
	local pre=${words[cword]%"${COMP_WORDS[COMP_CWORD]}"}
	if [[ -n $pre ]]; then
		for i in "${!COMPREPLY[@]}"; do
			COMPREPLY[i]=${COMPREPLY[i]#"$pre"}
		done
	fi
	return 0
}

_lockbox_main() {
	local cur=${words[cword]} bin=${words[0]} applet i=1
	# a leading ~ in the command word
	[[ $bin == '~'/* ]] && bin=$HOME/${bin#'~'/}
	if [[ ${bin##*/} == lockbox ]]; then
		if ((cword == 1)); then
			_lockbox_add "$cur" "$(printf '%s\n' adaptive locks mutex slots waitfor \
				--help --version --list --shell-lib)"
			return 0
		fi
		applet=${words[1]}
		i=2
	else
		applet=${bin##*/}
		# the applet's name is a link to lockbox: find the binary it names
		bin=lockbox
		type -P "${words[0]}" >/dev/null 2>&1 && bin=$(type -P "${words[0]}")
		[[ -x ${bin%/*}/lockbox ]] && bin=${bin%/*}/lockbox
	fi
	case $applet in
	slots | mutex | waitfor | adaptive | locks) ;;
	*) return 0 ;;
	esac
	type -P "$bin" >/dev/null 2>&1 || return 0

	local opts word prev arg dir="" sub=""
	local -a pos=()
	opts=$(_lockbox_opts "$bin" "$applet")
	# walk the words before the cursor: options (and their arguments), then
	# positionals; a COMMAND's own words are its completion's business
	while ((i < cword)); do
		word=${words[i]}
		if [[ $word == -- ]] && _lockbox_optok; then
			_lockbox_command "$((i + 1))"
			return 0
		elif [[ $word == -* ]] && _lockbox_optok; then
			arg=$(_lockbox_optarg "$word")
			case $word in
			--dir=*) dir=${word#*=} ;;
			-d?*) dir=${word#-d} ;;
			esac
			if [[ -n $arg && $word != *=* && $word != -[a-zA-Z]?* ]]; then
				((i++))
				[[ $word == -d || $word == --dir ]] && dir=${words[i]:-}
			fi
		else
			pos+=("$word")
			if ((${#pos[@]} == 1)) && [[ $word =~ ^(acquire|release)$ ||
				$applet:$word == adaptive:status ]]; then
				sub=$word
			fi
			# check, list, held, create: nothing follows
			[[ -z $sub && ${#pos[@]} -ge 2 && $applet != waitfor &&
				$word =~ ^(check|list|held|create)$ ]] && return 0
			if _lockbox_at_command; then
				_lockbox_command "$((i + 1))"
				return 0
			fi
		fi
		((i++))
	done

	prev=${words[cword - 1]}
	# the argument of an option
	if ((cword > 1)) && [[ $prev == -* ]] && _lockbox_optok; then
		arg=$(_lockbox_optarg "$prev")
		if [[ -n $arg ]]; then
			case $arg in
			DIR) _lockbox_files "$cur" -d ;;
			FILE | PATH) _lockbox_files "$cur" ;;
			SIG) _lockbox_add "$cur" "$(printf '%s\n' TERM INT HUP KILL USR1 USR2 none)" ;;
			esac
			return 0
		fi
	fi
	if [[ $cur == -* ]] && _lockbox_optok; then
		_lockbox_add "$cur" "$(cut -d' ' -f1 <<<"$opts")"
		return 0
	fi
	case $applet:${#pos[@]}:$sub in
	slots:0: | mutex:0:)
		_lockbox_add "$cur" "$(printf '%s\n' acquire release)"
		_lockbox_files "$cur"
		;;
	slots:1:)
		_lockbox_add "$cur" "$(printf '%s\n' check list held create)"
		;;
	adaptive:0:)
		_lockbox_add "$cur" status
		_lockbox_atoms "$bin" "$cur" "$dir"
		;;
	adaptive:*:status)
		# an atom named once is not offered again
		_lockbox_atoms "$bin" "$cur" "$dir" "${pos[@]:1}"
		;;
	esac
	return 0
}

# The helpers below read the locals of _lockbox and _lockbox_main.
# Options come before the positionals, or after acquire or release.
_lockbox_optok() {
	((${#pos[@]} == 0)) || [[ $sub == acquire || $sub == release ]]
}

# The argument an option takes (DUR, FILE, ...), or nothing.
_lockbox_optarg() {
	local name arg
	while read -r name arg; do
		[[ $name == "${1%%=*}" ]] && printf '%s\n' "$arg" && return 0
	done <<<"$opts"
}

# Whether COMMAND starts after the positionals so far.
_lockbox_at_command() {
	[[ -z $sub ]] || return 1
	case $applet in
	slots | waitfor) ((${#pos[@]} >= 2)) ;;
	mutex | adaptive) ((${#pos[@]} >= 1)) ;;
	*) return 1 ;;
	esac
}

# Complete COMMAND [ARG...] starting at word $1 (mutex: or check, list, held, create).
_lockbox_command() {
	local start=$1 c
	if ((start < cword)); then
		if declare -F _command_offset >/dev/null; then
			_command_offset "${wstart[start]}"
		else
			_lockbox_files "$cur"
		fi
		return 0
	fi
	[[ $applet == mutex && ${#pos[@]} == 1 ]] &&
		_lockbox_add "$cur" "$(printf '%s\n' check list held create)"
	while IFS= read -r c; do
		COMPREPLY+=("$c")
	done < <(compgen -c -- "$cur" | sort -u)
}

complete -F _lockbox lockbox slots mutex waitfor adaptive
