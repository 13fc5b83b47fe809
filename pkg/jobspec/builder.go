package jobspec

// Builders make jobspecs in code, for tests and for packages that turn other
// requests (a Kubernetes pod group, say) into jobspecs:
//
//	js := jobspec.New(
//		jobspec.R("node", 2).Exclusive().With(
//			jobspec.Slot(4, "task").With(jobspec.R("core", 8), jobspec.R("gpu", 1)),
//		),
//	).Duration(3600).Constraint(jobspec.Properties("batch")).Obj()
//
// Builders do not check anything as they go; Build (or Validate) does, with
// the same messages Parse gives.

// ResourceBuilder builds one resource vertex.
type ResourceBuilder struct{ r *Resource }

// R starts a resource of the given type with the fixed count n.
func R(typ string, n int64) *ResourceBuilder {
	return &ResourceBuilder{r: &Resource{Type: typ, Count: Fixed(n)}}
}

// Slot starts a task slot with count n and the given label.
func Slot(n int64, label string) *ResourceBuilder {
	b := R(SlotType, n)
	b.r.Label = label
	return b
}

// With appends children.
func (b *ResourceBuilder) With(children ...*ResourceBuilder) *ResourceBuilder {
	for _, c := range children {
		b.r.With = append(b.r.With, c.r)
	}
	return b
}

// Exclusive sets exclusive: true.
func (b *ResourceBuilder) Exclusive() *ResourceBuilder { b.r.Exclusive = ExclusiveTrue; return b }

// Shared sets exclusive: false (not allowed in or under a slot).
func (b *ResourceBuilder) Shared() *ResourceBuilder { b.r.Exclusive = ExclusiveFalse; return b }

// Range replaces the count with a range; max may be Unbounded and op is
// '+', '*' or '^'.
func (b *ResourceBuilder) Range(min, max int64, op byte, operand int64) *ResourceBuilder {
	b.r.Count = Count{Min: min, Max: max, Operator: op, Operand: operand}
	return b
}

// Unit sets the unit of the count (for pools such as memory).
func (b *ResourceBuilder) Unit(u string) *ResourceBuilder { b.r.Unit = u; return b }

// Label sets the label.
func (b *ResourceBuilder) Label(l string) *ResourceBuilder { b.r.Label = l; return b }

// Requires limits the nodes a slot may be placed on.
func (b *ResourceBuilder) Requires(c *Constraint) *ResourceBuilder { b.r.Requires = c; return b }

// ID sets the id.
func (b *ResourceBuilder) ID(id string) *ResourceBuilder { b.r.ID = id; return b }

// Res returns the resource built so far (shared, not copied).
func (b *ResourceBuilder) Res() *Resource { return b.r }

// JobspecBuilder builds a Jobspec.
type JobspecBuilder struct {
	js     Jobspec
	system map[string]any
	user   map[string]any
}

// DefaultCommand is the command of the task Obj adds when none was given.
// The scheduler never looks at it.
var DefaultCommand = []string{"true"}

// New starts a canonical (version 9999) jobspec with the given top-level
// resources.
func New(resources ...*ResourceBuilder) *JobspecBuilder {
	b := &JobspecBuilder{js: Jobspec{Version: VersionCanonical}}
	for _, r := range resources {
		b.js.Resources = append(b.js.Resources, r.r)
	}
	return b
}

// Version sets the version (1 or 9999).
func (b *JobspecBuilder) Version(v int) *JobspecBuilder { b.js.Version = v; return b }

// Duration sets attributes.system.duration in seconds (0 = unlimited).
func (b *JobspecBuilder) Duration(seconds int64) *JobspecBuilder { b.js.Duration = seconds; return b }

// Constraint sets attributes.system.constraints.
func (b *JobspecBuilder) Constraint(c *Constraint) *JobspecBuilder { b.js.Constraint = c; return b }

// Task appends a task.
func (b *JobspecBuilder) Task(t Task) *JobspecBuilder { b.js.Tasks = append(b.js.Tasks, t); return b }

// System sets another attributes.system key (queue, cwd, ...). Duration and
// constraints are set with their own methods.
func (b *JobspecBuilder) System(key string, v any) *JobspecBuilder {
	if b.system == nil {
		b.system = map[string]any{}
	}
	b.system[key] = normalizeValue(v)
	return b
}

// User sets an attributes.user key.
func (b *JobspecBuilder) User(key string, v any) *JobspecBuilder {
	if b.user == nil {
		b.user = map[string]any{}
	}
	b.user[key] = normalizeValue(v)
	return b
}

// Obj returns the Jobspec without validating it. When no task was given it
// adds one task for the first slot (one per slot instance, running
// DefaultCommand), so a well-formed request validates without further ado. Attributes are filled
// from Duration, Constraint, System and User exactly as Parse would fill
// them from the encoded document, so Parse(Encode(js)) equals js.
func (b *JobspecBuilder) Obj() *Jobspec {
	js := b.js
	js.Tasks = append([]Task(nil), b.js.Tasks...)
	if slots := js.Slots(); len(js.Tasks) == 0 && len(slots) > 0 {
		js.Tasks = []Task{{
			Command: append([]string(nil), DefaultCommand...),
			Slot:    slots[0].Label,
			Count:   TaskCount{PerSlot: 1},
		}}
	}
	sys := map[string]any{"duration": js.Duration}
	for k, v := range b.system {
		sys[k] = v
	}
	if js.Constraint != nil {
		sys["constraints"] = js.Constraint.Map()
	}
	js.Attributes = map[string]any{"system": sys}
	if b.user != nil {
		user := make(map[string]any, len(b.user))
		for k, v := range b.user {
			user[k] = v
		}
		js.Attributes["user"] = user
	}
	return &js
}

// Build returns the Jobspec after Validate.
func (b *JobspecBuilder) Build() (*Jobspec, error) {
	js := b.Obj()
	if err := Validate(js); err != nil {
		return nil, err
	}
	return js, nil
}

// Constructors for constraints built in code. They compile eagerly; an
// invalid value (say, a bad hostlist) is reported by Validate or
// JobspecBuilder.Build with its path.

// Properties requires all the listed properties ("^p" forbids p).
func Properties(props ...string) *Constraint { return newLeaf(OpProperties, props) }

// Hosts requires the vertex name to be in one of the RFC 29 hostlists.
func Hosts(hostlists ...string) *Constraint { return newLeaf(OpHostlist, hostlists) }

// Ranks requires the vertex rank to be in one of the RFC 22 idsets.
func Ranks(idsets ...string) *Constraint { return newLeaf(OpRanks, idsets) }

// And requires all arguments to match.
func And(args ...*Constraint) *Constraint { return newNode(OpAnd, args) }

// Or requires at least one argument to match.
func Or(args ...*Constraint) *Constraint { return newNode(OpOr, args) }

// Not requires its argument not to match.
func Not(args ...*Constraint) *Constraint { return newNode(OpNot, args) }

// MatchAll is the empty constraint {}.
func MatchAll() *Constraint { return &Constraint{compiled: true} }

func newLeaf(op string, values []string) *Constraint {
	c := &Constraint{Op: op, Values: append([]string(nil), values...)}
	_ = c.check(root, 0) // errors resurface in Validate with a real path
	return c
}

func newNode(op string, args []*Constraint) *Constraint {
	c := &Constraint{Op: op, Args: append([]*Constraint(nil), args...)}
	_ = c.check(root, 0)
	return c
}
