package rules

import (
	"slices"
	"strings"
)

// pythonRules: a script runs unattended, and -m for a module known to be
// harmless; inline code, stdin and any other module go to a human.
var pythonRules = program{form: pythonForm}

// pythonModules are the modules -m runs unattended: they test, check or
// compile the project's own code, like a script of its own.
var pythonModules = []string{"pytest", "unittest", "doctest", "py_compile", "compileall", "tabnanny", "json.tool"}

func pythonForm(name string, args []string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "-" {
			return name + " - runs code from stdin"
		}
		if !strings.HasPrefix(a, "-") || a == "--" {
			return "" // the script; what follows are its own arguments
		}
		if strings.HasPrefix(a, "--") {
			if a == "--check-hash-based-pycs" {
				i++ // the one long option that takes the next word as its value
			}
			continue
		}
		for j := 1; j < len(a); j++ {
			switch a[j] {
			case 'c':
				return name + " -c runs inline code"
			case 'm':
				mod := a[j+1:]
				if mod == "" && i+1 < len(args) {
					mod = args[i+1]
				}
				if mod == "timeit" || mod == "pdb" {
					return name + " -m " + mod + " runs inline code from its arguments"
				}
				for _, bad := range []string{"pip", "ensurepip", "http.server", "smtpd", "venv", "site"} {
					if mod == bad || strings.HasPrefix(mod, bad+".") || bad == "pip" && strings.HasPrefix(mod, "pip") {
						return name + " -m " + mod + " installs packages, serves files or changes the environment"
					}
				}
				if !slices.Contains(pythonModules, mod) {
					return name + " -m " + mod + " is not a module the rules know to be harmless (runpy, cProfile and trace run other modules, pydoc serves files)"
				}
				return ""
			case 'W', 'X':
				if j == len(a)-1 {
					i++
				}
				j = len(a)
			}
		}
	}
	return ""
}
