package task

import (
	"strings"
	"unicode"

	"github.com/ampflow/ampflow/amp"
)

// Brief is a task said in a few words: what to do, where, and how its
// result is judged. Plan makes the whole plan of it.
type Brief struct {
	// Text is what to do; the plan's description and its one subtask.
	Text string
	// Details, when set, is added to the description below Text (an
	// issue's body).
	Details string
	// Repo is the repository: its absolute path, or its URL.
	Repo string
	// Branch is the branch to work on; empty is BranchFor(Text).
	Branch string
	// Criteria are the acceptance criteria; none is Text itself.
	Criteria []string
	// Risk is the risk level; empty is low.
	Risk amp.Risk
}

// BranchPrefix starts the branches BranchFor names.
const BranchPrefix = "ampflow/"

// maxSlug bounds the part of a branch name BranchFor takes from text.
const maxSlug = 48

// BranchFor names a branch after text: "Add MemberCount to Dial" is
// ampflow/add-membercount-to-dial. Text without a letter or digit is
// ampflow/task.
func BranchFor(text string) string {
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return r >= unicode.MaxASCII || !(unicode.IsLetter(r) || unicode.IsDigit(r))
	})
	slug := ""
	for _, w := range words {
		switch {
		case slug == "" && len(w) > maxSlug:
			slug = w[:maxSlug]
		case slug == "":
			slug = w
		case len(slug)+1+len(w) <= maxSlug:
			slug += "-" + w
		default:
			return BranchPrefix + slug // ends on a whole word
		}
	}
	if slug == "" {
		slug = "task"
	}
	return BranchPrefix + slug
}

// Problems are what keeps b from being a plan, by field: text, repo,
// risk; none when Plan can make one. The plan is then checked as every
// plan is (plan.repo names a repository ampflow cannot work in).
func (b Brief) Problems() map[string]string {
	p := map[string]string{}
	if strings.TrimSpace(b.Text) == "" {
		p["text"] = "is empty: say what the task is"
	}
	if strings.TrimSpace(b.Repo) == "" {
		p["repo"] = "is required: the repository to work in, a path or a URL"
	}
	switch b.Risk {
	case "", amp.RiskLow, amp.RiskMedium, amp.RiskHigh:
	default:
		p["risk"] = "must be low, medium or high"
	}
	return p
}

// Plan is the plan of b: one subtask, its branch, its criteria.
func (b Brief) Plan() amp.TaskDispatch {
	text := strings.TrimSpace(b.Text)
	desc := text
	if d := strings.TrimSpace(b.Details); d != "" {
		desc += "\n\n" + d
	}
	branch := b.Branch
	if branch == "" {
		branch = BranchFor(text)
	}
	criteria := b.Criteria
	if len(criteria) == 0 {
		criteria = []string{text}
	}
	risk := b.Risk
	if risk == "" {
		risk = amp.RiskLow
	}
	return amp.TaskDispatch{
		Description:        desc,
		Repo:               b.Repo,
		Branch:             branch,
		Subtasks:           []amp.Subtask{{SubtaskID: "S1", Description: text, EstimatedLines: 0}},
		AcceptanceCriteria: criteria,
		RiskLevel:          risk,
	}
}
