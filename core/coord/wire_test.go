package coord

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestOnlyWireBuildsKeys: in this package, only wire.go turns a role into
// record keys, a partition, a fold or a transactional id, and only wire.go
// makes a wireRole. Everything else has to go through Client.wire (a
// caller's role, prefixed) or Client.logRole (a role read off the log), so
// the compiler catches a call that forgets the prefix (issue 26: Leave and
// Watch once did).
func TestOnlyWireBuildsKeys(t *testing.T) {
	banned := map[string]bool{"RolePartition": true, "LeaseKey": true, "RegistrationKey": true, "FoldRaw": true, "Fold": true, "NewFolder": true}
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files found: %v", err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, f := range files {
		if f == "wire.go" || strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		ast.Inspect(file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if id, ok := n.X.(*ast.Ident); ok && id.Name == "core" && banned[n.Sel.Name] {
					t.Errorf("%s: core.%s outside wire.go: use a wireRole method", fset.Position(n.Pos()), n.Sel.Name)
				}
			case *ast.CompositeLit:
				if id, ok := n.Type.(*ast.Ident); ok && id.Name == "wireRole" {
					t.Errorf("%s: a wireRole literal outside wire.go: use Client.wire or Client.logRole", fset.Position(n.Pos()))
				}
			}
			return true
		})
	}
	if checked < 5 {
		t.Fatalf("checked only %d files", checked)
	}
}
