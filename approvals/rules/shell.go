package rules

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// metachars are refused anywhere in a command, in its syntax or inside a
// quoted argument, each with the name a human is shown; when several are
// present the first listed names the reason. In the syntax tree they are
// chaining, pipes, redirection and substitution. Inside an argument they
// still go to a human because the programs the rules allow read them too: sed
// separates commands with ; and newlines, awk pipes and redirects with | and
// >, make and npm scripts expand $. "$" alone is included because $HOME or
// $ANTHROPIC_AUTH_TOKEN expand to paths and secrets the rules cannot see.
var metachars = []struct{ s, name string }{
	{";", "chaining (;)"}, {"&", "chaining or background (&)"}, {"|", "a pipe (|)"},
	{"<", "redirection (<)"}, {">", "redirection (>)"}, {"\n", "a newline"}, {"\r", "a carriage return"},
	{"`", "command substitution (`)"}, {"$(", "command substitution ($()"}, {"${", "parameter expansion (${)"},
	{"$", "variable expansion ($)"},
}

// parsed is what parseCommand reads in a command line.
type parsed struct {
	words     []word // its one simple command, when why is ""
	why       string // why it goes to a human, when it is anything else
	commented bool
	// Every simple command in the line, wherever it stands (chained,
	// substituted, in a loop), with the words the rules cannot read as
	// unreadWord, and the target of every output redirection the rules can
	// read: what the command may write, whatever else sends it to a human.
	calls   [][]word
	outputs []word
}

// unreadWord stands for a word the rules cannot read (it holds an
// expansion): no path is named so.
var unreadWord = word{text: "\x00"}

// parseCommand parses cmd as bash, the shell Claude Code runs it in, and
// returns the words of its one simple command as the program receives them.
// Anything else goes to a human, and why says so: chaining, pipes,
// redirection, here-docs, substitution, expansion, assignments, subshells,
// groups, compound commands, brace expansion, or a command the parser cannot
// read. A comment is reported apart (commented), with the words: the command
// still goes to a human, unless its words are denied outright.
func parseCommand(cmd string) parsed {
	var pc parsed
	pc.words, pc.why, pc.commented = pc.parse(cmd)
	return pc
}

func (pc *parsed) parse(cmd string) (words []word, why string, commented bool) {
	// Every line of a command and every control character must be visible
	// in the one-line summary a human approves, whatever the shell makes of
	// them (a backslash-newline vanishes from the tree).
	found := newFindings(cmd)
	found.text(cmd, "\n", "\r")
	control := hasControl(cmd)

	f, err := syntax.NewParser(syntax.KeepComments(true), syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(cmd), "")
	if err != nil {
		// Unparsable: name the first metacharacter if there is one, as the
		// reason a human reads, or else what the parser objects to.
		found.text(cmd)
		if why := found.reason(control); why != "" {
			return nil, why, false
		}
		return nil, "the command cannot be parsed (" + parseProblem(err) + "): a human decides", false
	}
	syntax.Walk(f, found.visit)
	syntax.Walk(f, pc.visit)
	if why := found.reason(control); why != "" {
		return nil, why, false
	}
	if len(f.Stmts) != 1 {
		return nil, "the command is not one simple command: a human decides", false
	}
	st := f.Stmts[0]
	call, ok := st.Cmd.(*syntax.CallExpr)
	if !ok || st.Negated || st.Background || st.Coprocess || st.Disown || len(st.Redirs) > 0 || len(call.Assigns) > 0 {
		return nil, "the command is not one simple command: a human decides", false
	}
	for _, w := range call.Args {
		lw, why := literal(w)
		if why != "" {
			return nil, why, false
		}
		words = append(words, lw)
	}
	return words, "", found.comment
}

// visit records the simple commands and output redirections in the tree.
func (pc *parsed) visit(n syntax.Node) bool {
	switch n := n.(type) {
	case *syntax.CallExpr:
		var call []word
		for _, w := range n.Args {
			lw, why := literal(w)
			if why != "" {
				lw = unreadWord
			}
			call = append(call, lw)
		}
		if len(call) > 0 {
			pc.calls = append(pc.calls, call)
		}
	case *syntax.Redirect:
		switch n.Op {
		case syntax.RdrOut, syntax.AppOut, syntax.RdrInOut, syntax.DplOut, syntax.RdrClob, syntax.RdrAll, syntax.AppAll:
			if n.Word == nil {
				break
			}
			if lw, why := literal(n.Word); why == "" {
				pc.outputs = append(pc.outputs, lw)
			}
		}
	}
	return true
}

// findings collects what the syntax tree shows: the metachars present, and
// the first other construct the rules do not check.
type findings struct {
	src       string
	chars     map[string]bool
	construct string // the full reason for the first construct, or ""
	comment   bool
}

func newFindings(src string) *findings { return &findings{src: src, chars: map[string]bool{}} }

// text marks the metachars in s (only those in only, when given).
func (f *findings) text(s string, only ...string) {
	for _, m := range metachars {
		if (len(only) == 0 || slices.Contains(only, m.s)) && strings.Contains(s, m.s) {
			f.chars[m.s] = true
		}
	}
}

func (f *findings) uses(what string) {
	if f.construct == "" {
		f.construct = "the command uses " + what + ": a human decides"
	}
}

// reason is the verdict's reason for what was found, or "": metachars first,
// then a control character, then any other construct.
func (f *findings) reason(control bool) string {
	for _, m := range metachars {
		if f.chars[m.s] {
			return "the command contains " + m.name + ": a human decides"
		}
	}
	if control {
		return "the command contains a control character: a human decides"
	}
	return f.construct
}

// visit records one node of the syntax tree. Literal text is scanned raw,
// before the shell removes quotes and backslashes.
func (f *findings) visit(n syntax.Node) bool {
	switch n := n.(type) {
	case *syntax.Stmt:
		switch {
		case n.Background || n.Disown:
			f.chars["&"] = true
		case n.Coprocess:
			f.chars["|"], f.chars["&"] = true, true
		case n.Semicolon.IsValid():
			f.chars[";"] = true
		}
		if n.Negated {
			f.uses("negation (!)")
		}
	case *syntax.BinaryCmd:
		f.text(n.Op.String())
	case *syntax.Redirect:
		f.text(n.Op.String())
	case *syntax.ProcSubst:
		f.text(n.Op.String())
	case *syntax.CmdSubst:
		if n.Backquotes {
			f.chars["`"] = true
		} else {
			f.chars["$("] = true
		}
	case *syntax.ArithmExp:
		if n.Bracket {
			f.chars["$"] = true
		} else {
			f.chars["$("] = true
		}
	case *syntax.ParamExp:
		if n.Short {
			f.chars["$"] = true
		} else {
			f.chars["${"] = true
		}
	case *syntax.SglQuoted:
		if n.Dollar {
			f.chars["$"] = true
		}
		f.text(n.Value)
	case *syntax.DblQuoted:
		if n.Dollar {
			f.chars["$"] = true
		}
	case *syntax.Lit:
		f.text(n.Value)
	case *syntax.Comment:
		f.text(n.Text)
		f.comment = true
	case *syntax.CallExpr:
		if len(n.Assigns) > 0 {
			// The shell's first word is then an assignment (FOO=1 ls, where
			// PATH= or LD_PRELOAD= would change what runs), which no allow
			// list names.
			a := n.Assigns[0]
			if f.construct == "" {
				first := a.Name.Value + "="
				if from, to := a.Pos().Offset(), a.End().Offset(); from <= to && to <= uint(len(f.src)) {
					first = f.src[from:to]
				}
				f.construct = fmt.Sprintf("%s is not on the allow list (BRIDGE_APPROVE_ALLOW): a human decides", normalizeProgram(first))
			}
		}
	case *syntax.Subshell:
		if f.construct == "" {
			f.construct = "the command contains a subshell or grouping ( ): a human decides"
		}
	case *syntax.TimeClause:
		if f.construct == "" {
			f.construct = "time runs another program or inline code: a human decides"
		}
	case *syntax.Block:
		f.uses("a group { }")
	case *syntax.ArithmCmd:
		f.uses("an arithmetic command (( ))")
	case *syntax.ExtGlob:
		f.uses("an extended glob")
	case *syntax.TestClause:
		f.uses("a test [[ ]]")
	case *syntax.DeclClause:
		f.uses("a declaration (" + n.Variant.Value + ")")
	case *syntax.IfClause, *syntax.WhileClause, *syntax.ForClause, *syntax.CaseClause, *syntax.FuncDecl,
		*syntax.LetClause, *syntax.CoprocClause, *syntax.TestDecl:
		f.uses("a compound command (if, while, for, case, a function, let, coproc)")
	}
	return true
}

// hasControl reports a control character other than tab; \n and \r are
// metachars.
func hasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0x7f {
			return true
		}
	}
	return false
}

// parseProblem is the parser's complaint in words a human reads.
func parseProblem(err error) string {
	var pe syntax.ParseError
	if errors.As(err, &pe) {
		if strings.Contains(pe.Text, "without closing quote") {
			return "unbalanced quotes"
		}
		return pe.Text
	}
	return err.Error()
}

// word is one argument as the program receives it and, when bash expands it
// as a glob (it holds an unquoted *, ? or [), the pattern bash matches, with
// every quoted character escaped by a backslash.
type word struct {
	text, glob string
}

// literal returns the value of a word made only of literal text, single and
// double quotes, or the reason it goes to a human. Brace expansion is judged
// as the hand-written tokenizer did, erring wide: an unquoted { followed
// anywhere in the word by an unquoted , or by .. (bash expands only a
// matching {a,b} or {x..y}, which this includes).
func literal(w *syntax.Word) (word, string) {
	var b, pat strings.Builder
	var brace, open, paren, glob bool
	quoted := func(s string) {
		b.WriteString(s)
		for i := 0; i < len(s); i++ {
			pat.WriteByte('\\')
			pat.WriteByte(s[i])
		}
	}
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			v := p.Value
			for i := 0; i < len(v); i++ {
				c := v[i]
				if c == '\\' {
					if i+1 == len(v) {
						return word{}, "the command cannot be parsed (trailing backslash): a human decides"
					}
					i++
					if v[i] != '\n' {
						quoted(v[i : i+1])
					}
					continue
				}
				switch {
				case c == '(' || c == ')':
					paren = true
				case c == '{':
					open = true
				case c == ',' && open, c == '.' && open && i+1 < len(v) && v[i+1] == '.':
					brace = true
				case c == '*' || c == '?' || c == '[':
					glob = true
				}
				b.WriteByte(c)
				pat.WriteByte(c)
			}
		case *syntax.SglQuoted:
			if p.Dollar {
				return word{}, "the command contains " + metacharName("$") + ": a human decides"
			}
			quoted(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				return word{}, "the command contains " + metacharName("$") + ": a human decides"
			}
			for _, q := range p.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok {
					return word{}, fmt.Sprintf("the command uses shell syntax the rules do not check (%T): a human decides", q)
				}
				quoted(unescapeDouble(l.Value))
			}
		default:
			return word{}, fmt.Sprintf("the command uses shell syntax the rules do not check (%T): a human decides", p)
		}
	}
	switch {
	case paren:
		return word{}, "the command contains a subshell or grouping ( ): a human decides"
	case brace:
		return word{}, "the command uses brace expansion {a,b}: a human decides"
	}
	lw := word{text: b.String()}
	if glob {
		lw.glob = pat.String()
	}
	return lw, ""
}

// unescapeDouble removes the backslashes bash removes inside double quotes:
// before $, `, ", \ and a newline (which goes too).
func unescapeDouble(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' && i+1 < len(v) && strings.IndexByte("$`\"\\\n", v[i+1]) >= 0 {
			i++
			if v[i] == '\n' {
				continue
			}
		}
		b.WriteByte(v[i])
	}
	return b.String()
}

func metacharName(s string) string {
	for _, m := range metachars {
		if m.s == s {
			return m.name
		}
	}
	return s
}
