# SPDX-License-Identifier: MIT
# Prints one markdown table of the docs as man(7) paragraphs, for the
# manual pages the Makefile makes: the table is the one under the line that
# is exactly `header`; each row becomes .TP, its first cell, then the rest.
# A table of four columns is the metrics' (name, type, labels, meaning).
#
#   awk -v header='| value | meaning |' -f man/table.awk docs/http.md
#
# Markdown kept: `code` and **strong** in bold, [text](link) as its text.

function roff(s,    t) {
	gsub(/\\/, "\\e", s)
	while (match(s, /\[[^]]*\]\([^)]*\)/)) {
		t = substr(s, RSTART + 1, RLENGTH - 1)
		sub(/\]\(.*$/, "", t)
		s = substr(s, 1, RSTART - 1) t substr(s, RSTART + RLENGTH)
	}
	while (match(s, /\*\*[^*]+\*\*/))
		s = substr(s, 1, RSTART - 1) "\\fB" \
		    substr(s, RSTART + 2, RLENGTH - 4) "\\fR" \
		    substr(s, RSTART + RLENGTH)
	while (match(s, /`[^`]*`/))
		s = substr(s, 1, RSTART - 1) "\\fB" \
		    substr(s, RSTART + 1, RLENGTH - 2) "\\fR" \
		    substr(s, RSTART + RLENGTH)
	return "\\&" s
}

function trim(s) {
	sub(/^[ \t]+/, "", s)
	sub(/[ \t]+$/, "", s)
	return s
}

$0 == header {
	found = 1
	getline		# the |---| line
	next
}

found && /^\|/ {
	n = split($0, c, "|")	# c[1] and c[n] are what is outside the bars
	for (i = 2; i < n; i++)
		c[i] = trim(c[i])
	print ".TP"
	print roff(c[2])
	if (n == 6)
		body = "(" c[3] (c[4] != "" ? "; labels " c[4] : "") ") " c[5]
	else {
		body = c[3]
		for (i = 4; i < n; i++)
			body = body " " c[i]
	}
	print roff(body)
	rows++
	next
}

found {
	exit
}

END {
	if (!rows) {
		print "table.awk: no table under \"" header "\"" > "/dev/stderr"
		exit 1
	}
}
