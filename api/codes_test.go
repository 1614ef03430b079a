package api

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"testing"
)

// Problem codes are typed constants: a code written as a string literal
// where a Problem is made or matched would compile (the constant is
// untyped) and let a typo through, so the source is checked for them.
func TestProblemCodesAreConstants(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	literal := func(e ast.Expr) bool {
		bl, ok := e.(*ast.BasicLit)
		if !ok || bl.Kind != token.STRING {
			return false
		}
		s, _ := strconv.Unquote(bl.Value)
		_, known := problemKinds[Code(s)]
		return known
	}
	isCode := func(e ast.Expr) bool {
		switch e := e.(type) {
		case *ast.Ident:
			return e.Name == "Code" || e.Name == "problemCode"
		case *ast.SelectorExpr:
			return e.Sel.Name == "Code" || e.Sel.Name == "problemCode"
		}
		return false
	}
	for _, name := range files {
		if filepath.Ext(name) != ".go" || len(name) > 8 && name[len(name)-8:] == "_test.go" {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			bad := false
			switch n := n.(type) {
			case *ast.CallExpr:
				if id, ok := n.Fun.(*ast.Ident); ok && id.Name == "newProblem" && len(n.Args) > 0 {
					bad = literal(n.Args[0])
				}
			case *ast.KeyValueExpr:
				if id, ok := n.Key.(*ast.Ident); ok && id.Name == "Code" {
					bad = literal(n.Value)
				}
			case *ast.BinaryExpr:
				bad = (isCode(n.X) && literal(n.Y)) || (isCode(n.Y) && literal(n.X))
			case *ast.AssignStmt:
				for i, l := range n.Lhs {
					if i < len(n.Rhs) && isCode(l) && literal(n.Rhs[i]) {
						bad = true
					}
				}
			}
			if bad {
				t.Errorf("%s: a problem code as a string literal; use its Code constant", fset.Position(n.Pos()))
			}
			return true
		})
	}
}
