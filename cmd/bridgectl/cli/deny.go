package cli

import "context"

var denyCmd = &Command{
	Name:  "deny",
	Usage: "deny ID [--reason R]",
	Short: "refuse a waiting tool call; the reason reaches the model",
	Long: `deny ID refuses the tool call of request ID (from ` + "`bridgectl pending`" + `; a
unique prefix of 8 or more characters will do; anything shorter, or not hex, is
a usage mistake: exit 2). The job continues without it: the model is told the
reason, with the instruction not to work around the denial. Give the reason with --reason; it is also kept in the audit log. A
request that expired was already denied; one already answered cannot be changed.`,
	Run: runDeny,
}

func runDeny(ctx context.Context, e *Env, args []string) error {
	f := newFlags(e, false)
	reason := f.String("reason", "", "why (the model is told)")
	pos, err := f.parse(args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{"deny needs one request ID (see `bridgectl pending`)"}
	}
	c, err := f.load()
	if err != nil {
		return err
	}
	return decideOne(e, c, pos[0], false, *reason, "bridgectl deny")
}
