package kit

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// operationsTable is kit/contract/operations.json: what each kit calls
// every operation, its options and their units, its result.
type operationsTable struct {
	Operations []struct {
		Op     string            `json:"op"`
		Go     *string           `json:"go"`
		Result map[string]string `json:"result"`
		Why    string            `json:"why"`
		Opts   []struct {
			Option string          `json:"option"`
			Go     *string         `json:"go"`
			Unit   json.RawMessage `json:"unit"`
			Why    string          `json:"why"`
		} `json:"options"`
	} `json:"operations"`
	States       []string                     `json:"states"`
	Outcomes     map[string]map[string]string `json:"outcomes"`
	AnswerFields map[string]json.RawMessage   `json:"answer_fields"`
}

func readOperations(t *testing.T) operationsTable {
	t.Helper()
	b, err := os.ReadFile("contract/operations.json")
	if err != nil {
		t.Fatal(err)
	}
	var tab operationsTable
	if err := json.Unmarshal(b, &tab); err != nil {
		t.Fatalf("contract/operations.json: %v", err)
	}
	if len(tab.Operations) < 20 || len(tab.States) != 7 {
		t.Fatalf("contract/operations.json has %d operations and %d states", len(tab.Operations), len(tab.States))
	}
	return tab
}

// kitSource is what the kit's own source declares: functions, methods of
// *Client, types with their fields, and string constants.
type kitSource struct {
	funcs  map[string]*ast.FuncDecl // Open, NewRequestID, and "Client.Get" for methods
	fields map[string]string        // "CallOptions.Timeout" → "time.Duration"
	types  map[string]bool
	consts map[string]string // StateCarriedOut → "carried_out"
}

func parseKit(t *testing.T) kitSource {
	t.Helper()
	fset := token.NewFileSet()
	src := kitSource{funcs: map[string]*ast.FuncDecl{}, fields: map[string]string{}, types: map[string]bool{}, consts: map[string]string{}}
	// A constant may be localapi's, named (localapi.X) or converted
	// (string(localapi.X)): the local API's words are defined there once.
	refs := map[string]string{}
	var files []string
	for _, dir := range []string{".", "../api/localapi"} {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".go") && !strings.HasSuffix(e.Name(), "_test.go") {
				files = append(files, filepath.Join(dir, e.Name()))
			}
		}
	}
	for _, name := range files {
		prefix := ""
		if filepath.Dir(name) != "." {
			prefix = "localapi."
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if prefix != "" {
					continue
				}
				name := d.Name.Name
				if d.Recv != nil {
					name = strings.TrimPrefix(types.ExprString(d.Recv.List[0].Type), "*") + "." + name
				}
				src.funcs[name] = d
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if prefix != "" {
							continue
						}
						src.types[s.Name.Name] = true
						if st, ok := s.Type.(*ast.StructType); ok {
							for _, f := range st.Fields.List {
								for _, n := range f.Names {
									src.fields[s.Name.Name+"."+n.Name] = types.ExprString(f.Type)
								}
							}
						}
					case *ast.ValueSpec:
						for i, n := range s.Names {
							if i < len(s.Values) {
								v := s.Values[i]
								if c, ok := v.(*ast.CallExpr); ok && types.ExprString(c.Fun) == "string" && len(c.Args) == 1 {
									v = c.Args[0]
								}
								if sel, ok := v.(*ast.SelectorExpr); ok && types.ExprString(sel.X) == "localapi" {
									refs[prefix+n.Name] = "localapi." + sel.Sel.Name
								}
								if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
									src.consts[prefix+n.Name], _ = strconv.Unquote(lit.Value)
								}
							}
						}
					}
				}
			}
		}
	}
	for name, ref := range refs {
		if v, ok := src.consts[ref]; ok {
			src.consts[name] = v
		}
	}
	return src
}

// TestOperations: the Go kit has every operation of the shared table
// under its Go name, with the result and the options (and their units)
// the table says, the call states as constants, the outcome types, and an
// answer's fields: read from the kit's own source, so that a rename here
// that the table (and the other kits) did not take fails.
func TestOperations(t *testing.T) {
	tab, src := readOperations(t), parseKit(t)
	for _, op := range tab.Operations {
		if op.Go == nil {
			if op.Why == "" {
				t.Errorf("%s: no Go name and no why", op.Op)
			}
			continue
		}
		fn := src.funcs["Client."+*op.Go]
		if fn == nil {
			fn = src.funcs[*op.Go]
		}
		if fn == nil {
			t.Errorf("%s: the kit has no %s (neither a method of *Client nor a function)", op.Op, *op.Go)
			continue
		}
		if want, ok := op.Result["go"]; ok {
			if got := types.ExprString(fn.Type.Results.List[0].Type); got != want {
				t.Errorf("%s: %s returns %s, the table says %s", op.Op, *op.Go, got, want)
			}
		}
		params := map[string]string{}
		for _, p := range fn.Type.Params.List {
			for _, n := range p.Names {
				params[n.Name] = types.ExprString(p.Type)
			}
		}
		for _, o := range op.Opts {
			if o.Go == nil {
				if o.Why == "" {
					t.Errorf("%s: option %s has no Go name and no why", op.Op, o.Option)
				}
				continue
			}
			typ, ok := src.fields[*o.Go]
			if !ok {
				typ, ok = params[*o.Go]
			}
			if !ok {
				t.Errorf("%s: option %s: the kit has no field or parameter %s", op.Op, o.Option, *o.Go)
				continue
			}
			var units map[string]string
			if json.Unmarshal(o.Unit, &units) == nil && units["go"] != "" && typ != units["go"] {
				t.Errorf("%s: option %s (%s) is a %s, the table says %s", op.Op, o.Option, *o.Go, typ, units["go"])
			}
		}
	}
	for _, s := range tab.States {
		name := "State"
		for _, w := range strings.Split(s, "_") {
			name += strings.ToUpper(w[:1]) + w[1:]
		}
		if got, ok := src.consts[name]; !ok || got != s {
			t.Errorf("state %s: the kit's %s is %q (declared: %v)", s, name, got, ok)
		}
	}
	for kind, names := range tab.Outcomes {
		if !src.types[names["go"]] {
			t.Errorf("outcome %s: the kit has no type %s", kind, names["go"])
		}
	}
	for f, raw := range tab.AnswerFields {
		var names map[string]*string
		if json.Unmarshal(raw, &names) != nil {
			continue // "about"
		}
		if n := names["go"]; n != nil {
			if _, ok := src.fields["Answer."+*n]; !ok {
				t.Errorf("answer field %s: kit.Answer has no %s", f, *n)
			}
		}
	}
}
