package intake

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/ampflow/ampflow/activities/github"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config"
)

// checklistRE is an item of a Markdown task list: "- [ ] text", "* [x] text".
var checklistRE = regexp.MustCompile(`(?m)^\s*[-*+]\s+\[[ xX]\]\s+(.+?)\s*$`)

// riskLabelRE is a label that sets an issue's risk level.
var riskLabelRE = regexp.MustCompile(`^(?i)risk:\s*(low|medium|high)$`)

// Plan is the plan of an issue of repository r: its title the subtask,
// its body the description's details, the items of its checklist the
// acceptance criteria (the title when it has none), its risk level from a
// risk:LEVEL label or risk, its branch ampflow/issue-N-title.
func Plan(r config.IntakeRepo, is github.Issue, risk string) amp.TaskDispatch {
	var criteria []string
	for _, m := range checklistRE.FindAllStringSubmatch(is.Body, -1) {
		criteria = append(criteria, m[1])
	}
	lvl := amp.Risk(risk)
	for _, l := range is.Labels {
		if m := riskLabelRE.FindStringSubmatch(l); m != nil {
			lvl = amp.Risk(strings.ToLower(m[1]))
		}
	}
	details := strings.TrimSpace(is.Body)
	if is.URL != "" {
		details = strings.TrimSpace(details + "\n\nFrom " + is.URL)
	}
	title := strings.TrimSpace(is.Title)
	if title == "" {
		title = fmt.Sprintf("Issue %d", is.Number)
	}
	return task.Brief{
		Text:     title,
		Details:  details,
		Repo:     r.Repo,
		Branch:   task.BranchFor(fmt.Sprintf("issue %d %s", is.Number, title)),
		Criteria: criteria,
		Risk:     lvl,
	}.Plan()
}
