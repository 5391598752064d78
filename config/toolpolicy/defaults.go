package toolpolicy

// DefaultRules is the rule set tools.rules starts with: no writes outside
// the worktree, no force push, no push to the default branch (main or
// master), and an admin asked before the network is used, by a command
// or by a connection through the egress proxy. Anything else
// is allowed (tools.default).
func DefaultRules() []Rule {
	return []Rule{
		{Name: "no-write-outside-worktree", Kind: Edit, OutsideWorktree: true, Action: Deny,
			Reason: "writing outside the task's worktree is not allowed"},
		{Name: "no-force-push", Kind: Shell, Match: `(?i)\bgit\b[^"]*\bpush\b[^"]*(\s--force\b|\s--force-with-lease\b|\s-f\b|\s\+\S)`, Action: Deny,
			Reason: "force pushes are not allowed"},
		{Name: "no-push-to-default-branch", Kind: Shell, Match: `(?i)\bgit\b[^"]*\bpush\b[^"]*[\s:](refs/heads/)?(main|master)(\s|"|$)`, Action: Deny,
			Reason: "pushing to the default branch is not allowed; push the task's branch"},
		{Name: "ask-network", Kind: Shell, Match: `(?i)\b(curl|wget|ssh|scp|rsync|nc|git\s+(push|fetch|pull|clone)|npm\s+publish)\b`, Action: Ask, Risk: "medium",
			Reason: "the command uses the network"},
		{Name: "ask-fetch", Kind: Fetch, Action: Ask, Risk: "medium", Reason: "the tool uses the network"},
		{Name: "ask-egress", Kind: Network, Action: Ask, Risk: "medium",
			Reason: "the run connects to a host that neither its model API nor sandbox.network.allow names"},
	}
}
