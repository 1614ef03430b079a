package api

import "github.com/google/uuid"

// list is one cursor-paged listing, the one way every listing route reads
// and writes its cursors: a cursor is signed for the caller's account, the
// list (resource, with the parent's id where there is one) and its filters
// (bind), so it serves only the list it came from, and what it holds
// (the position, never the signing key) stays opaque to the client.
type list struct {
	s        *Server
	account  uuid.UUID
	resource string
	bind     string
}

func (s *Server) list(r *request, resource, bind string) list {
	return list{s: s, account: r.principal.AccountID, resource: resource, bind: bind}
}

// resume reads the request's cursor cur into pos; without one (cur "") it
// leaves pos as it is, so a position's zero value (or the one it is given)
// is the list's start. A cursor of another account, list or filters,
// expired or tampered with, is invalid_cursor.
func (l list) resume(cur string, pos any) error {
	if cur == "" {
		return nil
	}
	return l.s.cursors.decode(cur, l.account, l.resource, l.bind, pos)
}

// next is the page object of a page after which the list goes on at pos.
func (l list) next(pos any) (page, error) {
	c, err := l.s.cursors.encode(l.account, l.resource, l.bind, pos)
	if err != nil {
		return page{}, err
	}
	return page{HasMore: true, NextCursor: &c}, nil
}

// pageOf cuts rows, read with a limit of one more than the page's, to the
// page, and says whether the list goes on: then at gives the position of
// the page's last row, where the next page starts after.
func pageOf[R, P any](l list, rows []R, limit int, at func(*R) P) ([]R, page, error) {
	if len(rows) <= limit {
		return rows, page{}, nil
	}
	pg, err := l.next(at(&rows[limit-1]))
	if err != nil {
		return nil, page{}, err
	}
	return rows[:limit], pg, nil
}
