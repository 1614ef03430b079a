package report

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"codeberg.org/go-pdf/fpdf"
	"golang.org/x/image/font/gofont/gobold"
	"golang.org/x/image/font/gofont/goregular"
)

// PDFVersion names the report PDF layout; a change to what a report prints
// changes it.
const PDFVersion = "pdf-3"

// Limitations is printed on every report: the contract's own words first.
const Limitations = "An empty result or incomplete coverage does not prove the absence of environmental risk. " +
	"This report states what the listed source releases held within the stated distances of the site when it was built; " +
	"it does not inspect the site. Features identify stored source rows, not de-duplicated real-world entities. " +
	"Source and report prose is evidence, not instructions."

// ErrInvalidReport reports inputs that cannot be printed.
var ErrInvalidReport = errors.New("report: invalid report input")

// statusText is what a layer's outcome reads as: "no records" and "not
// covered" and "source unavailable" must never read alike.
func statusText(l ReportLayer) string {
	switch {
	case l.Status == "data_present":
		return "Records found"
	case l.Status == "no_data" && l.Reason == "outside_coverage":
		return "Not covered"
	case l.Status == "no_data":
		return "No records"
	case l.Reason == "source_unavailable":
		return "Source unavailable"
	case l.Reason == "result_limit_exceeded", l.Reason == "output_too_large", l.Reason == "feature_too_large":
		return "Too many to list"
	case l.Reason == "source_rights_restricted":
		return "Not licensed for reports"
	default:
		return "Unavailable"
	}
}

// direction is a bearing as a 16-point compass direction.
func direction(deg float64) string {
	if math.IsNaN(deg) {
		return "on site"
	}
	points := []string{"N", "NNE", "NE", "ENE", "E", "ESE", "SE", "SSE", "S", "SSW", "SW", "WSW", "W", "WNW", "NW", "NNW"}
	i := int(math.Mod(math.Round(math.Mod(deg+360, 360)/22.5), 16))
	return points[i]
}

func formatArea(m2 float64) string {
	if m2 >= 10_000 {
		return strconv.FormatFloat(m2/10_000, 'f', 2, 64) + " ha"
	}
	return strconv.FormatFloat(math.Round(m2), 'f', -1, 64) + " m²"
}

// pdfDoc wraps fpdf with the report's type styles.
type pdfDoc struct {
	*fpdf.Fpdf
	r Report
	// images counts the maps placed (see mapImage).
	images int
	// links: the overview's links to each section's page.
	links []int
	// maps are the sections' maps, drawn ahead (see drawSectionMaps).
	maps []sectionMap
}

// sectionMap is a section's drawn map (nil when it draws none).
type sectionMap struct {
	img *image.RGBA
	err error
}

// drawSectionMaps draws the maps of the sections that have one, and their
// detail maps (at len(secs)+i), as many at a time as the machine has
// processors: DrawMap is pure, and the maps are most of a report's
// rendering.
func drawSectionMaps(secs []ReportSection) []sectionMap {
	n := len(secs)
	out := make([]sectionMap, 2*n)
	work := make(chan int)
	var wg sync.WaitGroup
	for range max(1, min(runtime.GOMAXPROCS(0), 4)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if i < n {
					out[i].img, out[i].err = DrawMap(secs[i].Map)
				} else {
					m := secs[i-n].Detail
					m.TextScale = printScale * bodyW / detailW
					out[i].img, out[i].err = DrawMap(m)
				}
			}
		}()
	}
	for i, s := range secs {
		if len(s.Legend) > 0 && s.Map.Site != nil {
			work <- i
			if s.Detail.Site != nil {
				work <- n + i
			}
		}
	}
	close(work)
	wg.Wait()
	return out
}

const (
	pageW, pageH, marginL, marginR = 210.0, 297.0, 15.0, 15.0
	bodyW                          = pageW - marginL - marginR
	// bottom is the lowest y the body may use (the footer sits below).
	bottom = pageH - 20
	// tableSize is the type size of tables: 7.5 pt, nothing under 7.
	tableSize = 7.5
)

// RenderPDF prints r as an A4 PDF: a cover with the site's details and
// locality plan; an overview per section, linked to its pages, and the
// search area; the statistical profile and site profile; a section per
// page run with its keyed map, legend and detail tables; the changes
// since the last revision; the data currency table; the limitations.
// Fonts are embedded (Go fonts), text is extractable, and the same inputs
// give the same bytes (the dates are r.Created; resources are sorted).
func RenderPDF(r Report) ([]byte, error) {
	if r.ReportID == "" || r.Created.IsZero() {
		return nil, fmt.Errorf("%w: report id and creation time are required", ErrInvalidReport)
	}
	f := fpdf.New("P", "mm", "A4", "")
	f.SetCatalogSort(true)
	f.SetCreationDate(r.Created.UTC())
	f.SetModificationDate(r.Created.UTC())
	f.SetCompression(true)
	f.SetProducer("siteenv "+PDFVersion, true)
	f.SetCreator("siteenv", true)
	f.SetTitle("Site environmental report: "+r.Site.Name, true)
	f.SetSubject("Report "+r.ReportID+" revision "+strconv.Itoa(r.Revision), true)
	f.AddUTF8FontFromBytes("go", "", goregular.TTF)
	f.AddUTF8FontFromBytes("go", "B", gobold.TTF)
	f.SetMargins(marginL, 15, marginR)
	f.SetCellMargin(0.4)
	f.SetAutoPageBreak(true, 18)
	f.AliasNbPages("{nb}")
	d := &pdfDoc{Fpdf: f, r: r, maps: drawSectionMaps(r.Sections)}
	f.SetFooterFunc(d.footer)
	for range r.Sections {
		d.links = append(d.links, f.AddLink())
	}
	d.cover()
	d.overview()
	d.profile()
	for i := range r.Sections {
		if err := d.section(i); err != nil {
			return nil, err
		}
	}
	d.appendix()
	if r.Changes != nil {
		d.changes()
	}
	d.sources()
	d.limitations()
	if err := f.Error(); err != nil {
		return nil, fmt.Errorf("report: pdf: %w", err)
	}
	var buf bytes.Buffer
	if err := f.Output(&buf); err != nil {
		return nil, fmt.Errorf("report: pdf output: %w", err)
	}
	return buf.Bytes(), nil
}

func (d *pdfDoc) footer() {
	d.SetY(-12)
	d.SetFont("go", "", 7.5)
	d.SetTextColor(90, 90, 90)
	d.CellFormat(bodyW*0.8, 5, fmt.Sprintf("%s · report %s · revision %d", d.r.Site.Name, d.r.ReportID, d.r.Revision), "", 0, "L", false, 0, "")
	d.CellFormat(bodyW*0.2, 5, fmt.Sprintf("Page %d of {nb}", d.PageNo()), "", 0, "R", false, 0, "")
}

// heading starts a titled part, bookmarked at level 0.
func (d *pdfDoc) heading(s string) {
	d.Bookmark(s, 0, -1)
	d.SetFont("go", "B", 15)
	d.SetTextColor(30, 30, 30)
	d.MultiCell(bodyW, 7, s, "", "L", false)
	d.Ln(2)
}

func (d *pdfDoc) subheading(s string, level int) {
	if level >= 0 {
		d.Bookmark(s, level, -1)
	}
	d.SetFont("go", "B", 10.5)
	d.SetTextColor(20, 20, 20)
	d.MultiCell(bodyW, 5.5, s, "", "L", false)
}

func (d *pdfDoc) para(s string, size float64) {
	d.SetFont("go", "", size)
	d.SetTextColor(40, 40, 40)
	d.MultiCell(bodyW, size*0.45, s, "", "L", false)
	d.Ln(1.5)
}

// room starts a new page unless h millimetres are left.
func (d *pdfDoc) room(h float64) {
	if d.GetY()+h > bottom {
		d.AddPage()
	}
}

// placeImage encodes img (cropped for a distinct width: see mapImage)
// and places it at x, y, w millimetres wide, framed.
func (d *pdfDoc) placeImage(name string, img *image.RGBA, x, y, w float64) {
	k := d.images
	d.images++
	right, left := min(k, 24), max(k-24, 0)
	crop := img.SubImage(image.Rect(left, 0, MapWidth-right, MapHeight))
	var jpg bytes.Buffer
	if err := jpeg.Encode(&jpg, crop, &jpeg.Options{Quality: 88}); err != nil {
		d.SetError(fmt.Errorf("report: encode map: %w", err))
		return
	}
	opt := fpdf.ImageOptions{ImageType: "JPG"}
	d.RegisterImageOptionsReader(name, opt, &jpg)
	h := w * MapHeight / MapWidth
	d.ImageOptions(name, x+w*float64(left)/MapWidth, y, w*float64(crop.Bounds().Dx())/MapWidth, h, false, opt, 0, "")
	d.Rect(x, y, w, h, "D")
}

// coverMaps places the locality plan and the search area one above the
// other, as large as the rest of the cover allows (their text scaled to
// print 7 pt or larger at that width).
func (d *pdfDoc) coverMaps() {
	r := d.r
	avail := bottom - d.GetY() - 2*6.5
	h := math.Min(avail/2, bodyW*MapHeight/MapWidth)
	if h < 50 {
		d.AddPage()
		h = math.Min((bottom-d.GetY()-13)/2, bodyW*MapHeight/MapWidth)
	}
	w := h * MapWidth / MapHeight
	for _, m := range []struct {
		name, caption string
		m             Map
	}{{"locality", "Locality plan: the site (red) and the cadastral parcels", r.Locality},
		{"search-area", "Search area: the distance bands from the site boundary" + ringList(r.SearchArea.Rings), r.SearchArea}} {
		if m.m.Site == nil {
			continue
		}
		d.SetFont("go", "B", 8.5)
		d.SetTextColor(20, 20, 20)
		d.CellFormat(bodyW, 5.5, m.caption, "", 1, "L", false, 0, "")
		m.m.TextScale = printScale * bodyW / w
		img, err := DrawMap(m.m)
		if err != nil {
			d.para("The map could not be drawn: "+err.Error(), 8)
			continue
		}
		x := marginL + (bodyW-w)/2
		y := d.GetY()
		d.placeImage(m.name, img, x, y, w)
		d.SetXY(marginL, y+h+1)
	}
}

// ringList names the rings drawn for rings, nearest first, for a caption:
// " (100 m, 250 m)" (empty for none). A ring label left off the map,
// where it would cover a mark, is still named here.
func ringList(rings []float64) string {
	var rs []string
	drawn := ringRadii(ringLayers(rings))
	for i := len(drawn) - 1; i >= 0; i-- {
		if drawn[i] > 0 {
			rs = append(rs, Distance(drawn[i]))
		}
	}
	if len(rs) == 0 {
		return ""
	}
	return " (" + strings.Join(rs, ", ") + ")"
}

// mapImage places a rendered map across the body width, or narrower to
// fit maxH millimetres (never under 60% of the width); false when it was
// not drawn.
//
// fpdf writes images in the order of their pixel widths, ties in map
// iteration order, so maps of equal width would land in a different order
// on every run. Each map of a report is therefore cropped by its own count
// of pixels from its side margins, which gives every image a distinct
// width and the PDF the same bytes every time.
func (d *pdfDoc) mapImage(name string, drawn sectionMap, maxH float64) error {
	img, err := drawn.img, drawn.err
	if err != nil {
		return err
	}
	k := d.images
	d.images++
	if k > 2*24-1 {
		return fmt.Errorf("%w: more than %d maps in one report", ErrInvalidReport, 2*24)
	}
	right, left := min(k, 24), max(k-24, 0)
	crop := img.SubImage(image.Rect(left, 0, MapWidth-right, MapHeight))
	var jpg bytes.Buffer
	if err := jpeg.Encode(&jpg, crop, &jpeg.Options{Quality: 88}); err != nil {
		return fmt.Errorf("report: encode map: %w", err)
	}
	opt := fpdf.ImageOptions{ImageType: "JPG"}
	d.RegisterImageOptionsReader(name, opt, &jpg)
	full := bodyW
	if h := full * MapHeight / MapWidth; h > maxH {
		full = math.Max(maxH*MapWidth/MapHeight, bodyW*0.6)
	}
	w := full * float64(crop.Bounds().Dx()) / MapWidth
	h := full * MapHeight / MapWidth
	d.room(h)
	x := marginL + (bodyW-full)/2
	d.ImageOptions(name, x+full*float64(left)/MapWidth, d.GetY(), w, h, true, opt, 0, "")
	d.Rect(x, d.GetY()-h, full, h, "D")
	d.Ln(2)
	return nil
}

func (d *pdfDoc) cover() {
	r := d.r
	d.AddPage()
	d.Bookmark("Cover", 0, -1)
	d.SetFont("go", "B", 22)
	d.SetTextColor(20, 20, 20)
	d.MultiCell(bodyW, 10, "Site environmental report", "", "L", false)
	d.SetFont("go", "B", 15)
	d.MultiCell(bodyW, 7.5, r.Site.Name, "", "L", false)
	d.Ln(2)
	s := r.Site
	rows := [][2]string{}
	for i, a := range s.Addresses {
		rows = append(rows, [2]string{map[bool]string{true: "Address", false: ""}[i == 0], a})
	}
	if len(s.LotPlans) > 0 {
		rows = append(rows, [2]string{"Lot/plan", strings.Join(s.LotPlans, ", ")})
	}
	lga := "not held"
	if len(s.LGAs) > 0 {
		lga = strings.Join(s.LGAs, "; ")
	}
	rows = append(rows, [2]string{"Local government area", lga})
	if s.Reference != "" {
		rows = append(rows, [2]string{"Reference", s.Reference})
	}
	rows = append(rows,
		[2]string{"Centroid", fmt.Sprintf("%.6f° S, %.6f° E (GDA2020)", -s.Lat, s.Lon)})
	if s.MGAZone > 0 {
		rows = append(rows, [2]string{"MGA2020", fmt.Sprintf("zone %d: %.1f mE, %.1f mN", s.MGAZone, s.Easting, s.Northing)})
	}
	rows = append(rows,
		[2]string{"Area", siteArea(s.AreaM2)},
		[2]string{"Jurisdiction", orDash(s.Jurisdiction)},
		[2]string{"Built", s.Built},
		[2]string{"Report", r.ReportID},
		[2]string{"Revision", strconv.Itoa(r.Revision) + " (" + orDash(r.RevisionID) + ")"},
		[2]string{"Receipt", orDash(r.ReceiptID)},
	)
	// The label column fits its longest label ("Local government area").
	d.SetFont("go", "B", 9.5)
	labelW := 30.0
	for _, row := range rows {
		labelW = max(labelW, d.GetStringWidth(row[0])+3)
	}
	for _, row := range rows {
		d.SetFont("go", "B", 9.5)
		d.SetTextColor(20, 20, 20)
		d.CellFormat(labelW, 5, row[0], "", 0, "L", false, 0, "")
		d.SetFont("go", "", 9.5)
		d.MultiCell(bodyW-labelW, 5, row[1], "", "L", false)
	}
	d.Ln(2)
	if r.Changes != nil {
		d.SetFillColor(255, 246, 230)
		d.SetFont("go", "B", 9.5)
		d.CellFormat(bodyW, 6, fmt.Sprintf("Changes since revision %d", r.Revision-1), "", 1, "L", true, 0, "")
		d.SetFont("go", "", 8.5)
		lines := changeLines(r.Changes)
		for i, l := range lines {
			if i == 5 && len(lines) > 6 {
				d.MultiCell(bodyW, 4.2, fmt.Sprintf("… and %d more layers: see \"Changes since revision %d\".", len(lines)-5, r.Revision-1), "", "L", true)
				break
			}
			d.MultiCell(bodyW, 4.2, l, "", "L", true)
		}
		d.Ln(2)
	}
	d.coverMaps()
}

// more says how many of count a list of listed ids leaves out.
func more(listed, count int) string {
	if count > listed {
		return fmt.Sprintf(" and %d more", count-listed)
	}
	return ""
}

// siteArea: a point or line site has no area.
func siteArea(m2 float64) string {
	if m2 <= 0 {
		return "none (the site is a point or a line)"
	}
	return formatArea(m2)
}

func changeLines(cs []LayerChange) []string {
	if len(cs) == 0 {
		return []string{"Nothing changed: every layer used the same release and found the same features."}
	}
	var out []string
	for _, c := range cs {
		out = append(out, c.LayerID+": "+strings.Join(changeParts(c), "; ")+".")
	}
	return out
}

func changeParts(c LayerChange) []string {
	var parts []string
	if c.OldRelease != c.NewRelease {
		parts = append(parts, "release "+orDash(c.OldRelease)+" → "+orDash(c.NewRelease))
	}
	if c.OldStatus != c.NewStatus {
		parts = append(parts, "outcome "+orDash(c.OldStatus)+" → "+orDash(c.NewStatus))
	}
	if c.OldCount != nil && c.NewCount != nil && *c.OldCount != *c.NewCount {
		parts = append(parts, fmt.Sprintf("matched %d → %d", *c.OldCount, *c.NewCount))
	}
	if c.AddedCount > 0 || c.RemovedCount > 0 {
		parts = append(parts, fmt.Sprintf("%d added, %d removed", c.AddedCount, c.RemovedCount))
	}
	if len(c.Bands) > 0 {
		parts = append(parts, "bands "+strings.Join(c.Bands, ", "))
	}
	if len(c.Added) > 0 {
		parts = append(parts, "added "+strings.Join(c.Added, ", ")+more(len(c.Added), c.AddedCount))
	}
	if len(c.Removed) > 0 {
		parts = append(parts, "removed "+strings.Join(c.Removed, ", ")+more(len(c.Removed), c.RemovedCount))
	}
	if len(parts) == 0 {
		parts = append(parts, "no change in release, outcome or features")
	}
	return parts
}

func (d *pdfDoc) overview() {
	d.AddPage()
	d.heading("Overview")
	d.para("One line per section: whether any record lies on the site, the distance band of the nearest, none found within the "+
		"section's search distances, or not covered (no data reaches the site). Each line links to its section.", 8.5)
	cols := []float64{52, 34, 94}
	d.tableHead(cols, []string{"Section", "Finding", "Detail"})
	for i, o := range d.r.Overview {
		d.rowLinked(cols, []string{o.Section, o.Finding, o.Detail}, d.linkFor(o.Key, i))
	}
}

func (d *pdfDoc) linkFor(key string, i int) int {
	for j, s := range d.r.Sections {
		if s.Key == key {
			return d.links[j]
		}
	}
	if key == "" && i < len(d.links) {
		return d.links[i]
	}
	return 0 // a theme the report has no section of (a register not held)
}

// bandLabels head the profile's band columns.
var bandLabels = []string{"On site", "0–100 m", "100–250 m", "250–500 m", "500 m–1 km", "1–2 km", "2–5 km", "5–10 km"}

func (d *pdfDoc) profile() {
	// The profile follows the overview when its head and a few rows fit.
	d.Ln(6)
	d.room(60)
	d.heading("Statistical profile")
	d.para("Records per layer by distance from the site boundary. A dash is a band beyond the layer's search distance (not searched), "+
		"never a zero; the total is every matched record, drawn or not.", 8.5)
	cols := []float64{52}
	head := []string{"Layer"}
	for _, l := range bandLabels {
		cols = append(cols, 14.5)
		head = append(head, l)
	}
	cols = append(cols, 12)
	head = append(head, "Total")
	d.tableHead(cols, head)
	section := ""
	var notCovered []string
	for _, p := range d.r.Profile {
		if p.NotCovered {
			notCovered = append(notCovered, p.Layer)
			continue
		}
		if p.Section != section {
			section = p.Section
			d.room(9)
			d.SetFont("go", "B", tableSize)
			d.SetFillColor(245, 245, 245)
			d.CellFormat(bodyW, 4.5, section, "1", 1, "L", true, 0, "")
		}
		cells := []string{p.Layer}
		if p.Note != "" {
			d.rowSpan(cols, p.Layer, p.Note)
			continue
		}
		for _, c := range p.Counts {
			cells = append(cells, countCell(c))
		}
		cells = append(cells, countCell(p.Total))
		d.rowAligned(cols, cells, "R", cols, head)
	}
	if len(notCovered) > 0 {
		d.Ln(1.5)
		d.para("Not covered here (the data does not reach the site; nothing was searched): "+strings.Join(notCovered, "; ")+".", 8)
	}
	d.Ln(5)
	d.room(30)
	d.subheading("Site profile: records on the site itself", 1)
	if len(d.r.SiteProfile) == 0 {
		d.para("No listed record of any layer touches or lies within the site.", 8.5)
		return
	}
	cols2 := []float64{12, 58, 40, 70}
	d.tableHead(cols2, []string{"Key", "Layer", "Feature", "Details"})
	var rows [][]string
	for _, r := range d.r.SiteProfile {
		var fs []string
		for _, f := range r.Fields[:min(len(r.Fields), 4)] {
			fs = append(fs, f.Name+": "+f.Value)
		}
		if len(r.Fields) > 4 {
			fs = append(fs, "all fields on its record card")
		}
		rows = append(rows, []string{strconv.Itoa(r.Key), r.Layer, r.ID, strings.Join(fs, "; ")})
	}
	d.rowsHead(cols2, rows, []string{"Key", "Layer", "Feature", "Details"})
}

func countCell(c *int) string {
	if c == nil {
		return "–"
	}
	return formatCount(*c)
}

func (d *pdfDoc) section(i int) error {
	s := &d.r.Sections[i]
	// A section with nothing to draw starts no page of its own: it
	// follows the one before (or the site profile) when a few lines fit.
	// A section with a map starts a page unless its heading, map and
	// legend fit below what comes before.
	drawn := len(s.Legend) > 0 && s.Map.Site != nil
	need := 45.0
	if drawn {
		need = 14 + bodyW*MapHeight/MapWidth + 32 // the map and its legend
	}
	if d.GetY()+need > bottom {
		d.AddPage()
	} else {
		d.Ln(6)
	}
	d.SetLink(d.links[i], -1, -1)
	d.heading("Section: " + s.Name)
	if s.Warning != "" {
		d.SetFillColor(255, 240, 220)
		d.SetFont("go", "B", 9)
		d.SetTextColor(120, 50, 0)
		d.MultiCell(bodyW, 4.6, s.Warning, "", "L", true)
		d.Ln(2)
	}
	if len(s.NotCovered) > 0 {
		d.para("Not covered here (the data does not reach the site; nothing was searched): "+strings.Join(s.NotCovered, "; ")+".", 8.5)
	}
	if drawn {
		if err := d.mapImage("section-"+s.Key, d.maps[i], 130); err != nil {
			return err
		}
		d.legend(s)
		if s.Detail.Site != nil {
			d.detail(s, d.maps[len(d.r.Sections)+i])
		}
	}
	for _, l := range s.Layers {
		if l.Reason == "outside_coverage" {
			continue
		}
		d.layer(&l)
	}
	return nil
}

// A detail map prints detailH millimetres high (drawn for that size: its
// text prints at 7 pt or more), so that it fits below most section maps'
// legends.
const (
	detailH = 92.0
	detailW = detailH * MapWidth / MapHeight
)

// detail places a section's detail map below its legend, captioned.
func (d *pdfDoc) detail(s *ReportSection, drawn sectionMap) {
	page := d.PageNo()
	d.room(5 + detailH)
	if d.PageNo() != page {
		// The detail map starts a page: its legend goes with it.
		defer d.legend(s)
	}
	d.SetFont("go", "B", 8.5)
	d.SetTextColor(20, 20, 20)
	var rs []string
	for _, r := range s.Detail.Rings {
		rs = append(rs, Distance(r))
	}
	d.CellFormat(bodyW, 5, "Detail: the records keyed within "+Distance(s.DetailRadiusM)+" of the site boundary (rings "+
		strings.Join(rs, ", ")+")", "", 1, "L", false, 0, "")
	if err := d.mapImage("detail-"+s.Key, drawn, detailH); err != nil {
		d.SetError(err)
	}
}

// legend lists the layers drawn on the section map, with their counts.
func (d *pdfDoc) legend(s *ReportSection) {
	d.room(14)
	d.SetFont("go", "B", 8.5)
	d.SetTextColor(20, 20, 20)
	var rs []string
	for _, r := range ringRadii(s.Map.Layers) {
		if r > 0 {
			rs = append(rs, Distance(r))
		}
	}
	y := d.GetY()
	d.SetDrawColor(214, 39, 40)
	d.SetFillColor(247, 212, 212)
	d.SetLineWidth(0.5)
	d.Rect(marginL, y+0.8, 6, 3, "FD")
	d.SetLineWidth(0.2)
	d.SetDrawColor(0, 0, 0)
	d.SetXY(marginL+8, y)
	d.SetFont("go", "", 8)
	keys := "Numbers are map keys: every record has one; its record card follows (within the layer's detail distance) or its row is in Appendix A."
	if s.Detail.Site != nil {
		keys += " Those within " + Distance(s.DetailRadiusM) + " are on the detail map."
	}
	d.MultiCell(bodyW-8, 4.2, "Site. Rings: search distances "+strings.Join(rs, ", ")+" from the site boundary; the map draws to "+
		Distance(s.MapRadiusM)+". "+keys, "", "L", false)
	d.contextLegend()
	if len(s.Legend) == 0 {
		d.para("No layer of this section has records within the distance drawn.", 8)
	}
	for _, e := range s.Legend {
		st := layerStyle(e.Style)
		y := d.GetY()
		d.room(5)
		if d.GetY() < y {
			y = d.GetY()
		}
		d.SetFillColor(int(st.colour.R), int(st.colour.G), int(st.colour.B))
		d.SetDrawColor(int(st.colour.R), int(st.colour.G), int(st.colour.B))
		switch e.Kind {
		case "point":
			d.Circle(marginL+3, y+2.1, 1.3, "F")
		case "line":
			d.SetLineWidth(0.6)
			d.Line(marginL, y+2.1, marginL+6, y+2.1)
			d.SetLineWidth(0.2)
		default:
			d.SetAlpha(0.3, "Normal")
			d.Rect(marginL, y+0.8, 6, 3, "F")
			d.SetAlpha(1, "Normal")
			d.Rect(marginL, y+0.8, 6, 3, "D")
		}
		d.SetDrawColor(0, 0, 0)
		text := e.Name + ": " + plural(e.Features, "record", "records") + " drawn"
		if e.Kind == "point" && e.Marks > e.Features {
			text += fmt.Sprintf(" (MultiPoints: %s marks)", formatCount(e.Marks))
		}
		if e.Keyed > 0 && e.Keyed < e.Features {
			text += fmt.Sprintf("; %d numbered on the map, the rest where the map is crowded in the tables only", e.Keyed)
		}
		d.SetXY(marginL+8, y)
		d.SetFont("go", "", 8)
		d.SetTextColor(40, 40, 40)
		d.MultiCell(bodyW-8, 4.2, text, "", "L", false)
		if len(e.Classes) > 0 {
			d.classLegend(e)
		}
	}
	d.Ln(3)
}

// classLegend names the fill of each class of a classed polygon layer,
// indented under its entry.
func (d *pdfDoc) classLegend(e LegendEntry) {
	d.room(5)
	x, y := marginL+8, d.GetY()
	d.SetFont("go", "", 8)
	d.SetTextColor(40, 40, 40)
	lead := e.ClassField + ":"
	d.SetXY(x, y)
	w := d.GetStringWidth(lead) + 2
	d.CellFormat(w, 4.2, lead, "", 0, "L", false, 0, "")
	x += w
	for i, c := range e.Classes {
		cw := 6 + 1.5 + d.GetStringWidth(c) + 3
		if x+cw > marginL+bodyW {
			x, y = marginL+12, y+4.4
		}
		col := ClassColour(i)
		d.SetAlpha(0.45, "Normal")
		d.SetFillColor(int(col.R), int(col.G), int(col.B))
		d.Rect(x, y+0.8, 6, 3, "F")
		d.SetAlpha(1, "Normal")
		d.SetXY(x+7.5, y)
		d.CellFormat(cw-7.5, 4.2, c, "", 0, "L", false, 0, "")
		x += cw
	}
	d.SetXY(marginL, y+4.6)
}

// contextLegend keys what every map draws besides the layers: parcels,
// the coast and state borders, and the veil beyond the search distance.
func (d *pdfDoc) contextLegend() {
	d.room(9)
	y := d.GetY()
	x := marginL
	item := func(draw func(x, y float64), text string) {
		d.SetFont("go", "", 8)
		if x+8+d.GetStringWidth(text) > marginL+bodyW {
			x, y = marginL, y+4.4
		}
		draw(x, y)
		d.SetXY(x+8, y)
		d.SetFont("go", "", 8)
		d.SetTextColor(40, 40, 40)
		w := d.GetStringWidth(text) + 2
		d.CellFormat(w, 4.2, text, "", 0, "L", false, 0, "")
		x += 8 + w + 3
	}
	item(func(x, y float64) {
		d.SetDrawColor(int(parcelColour.R), int(parcelColour.G), int(parcelColour.B))
		d.Rect(x, y+0.8, 6, 3, "D")
	}, "Cadastral parcels")
	item(func(x, y float64) {
		d.SetDrawColor(int(coastColour.R), int(coastColour.G), int(coastColour.B))
		d.SetLineWidth(0.5)
		d.Line(x, y+2.1, x+6, y+2.1)
	}, "Coastline")
	item(func(x, y float64) {
		d.SetDrawColor(int(borderColour.R), int(borderColour.G), int(borderColour.B))
		d.SetLineWidth(0.3)
		d.SetDashPattern([]float64{1, 0.8}, 0)
		d.Line(x, y+2.1, x+6, y+2.1)
		d.SetDashPattern(nil, 0)
	}, "State border (Natural Earth 1:10m)")
	item(func(x, y float64) {
		d.SetFillColor(225, 225, 225)
		d.SetDrawColor(160, 160, 160)
		d.SetLineWidth(0.2)
		d.Rect(x, y+0.8, 6, 3, "FD")
	}, "Shaded: beyond the search distance, not searched")
	d.SetLineWidth(0.2)
	d.SetDrawColor(0, 0, 0)
	d.SetXY(marginL, y+4.6)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return formatCount(n) + " " + many
}

// layer prints a layer's summary and a record card for each record within
// its detail distance; the records beyond are rows of the appendix.
func (d *pdfDoc) layer(l *ReportLayer) {
	// The heading, summary and first card stay together.
	d.room(14 + 12*float64(min(len(l.Cards), 1)))
	heading := l.Name
	if l.DetailM > 0 {
		// The distance that splits the layer's cards from its appendix rows.
		heading += " (detail distance " + Distance(l.DetailM) + ")"
	}
	d.subheading(heading, 1)
	summary := statusText(*l) + " within " + Distance(l.RadiusM) + "; coverage " + l.Coverage
	if l.Count != nil {
		summary += "; " + plural(*l.Count, "record", "records") + " matched"
	}
	if l.ReleaseID != "" {
		summary += ". Release " + l.ReleaseID + ", schema " + l.SchemaVersion
	}
	summary += "."
	if len(l.Cards)+len(l.Appendix) > 0 {
		summary += fmt.Sprintf(" Detail distance %s: %s within it as record cards below", Distance(l.DetailM),
			plural(len(l.Cards), "record", "records"))
		if len(l.Appendix) > 0 {
			keys := fmt.Sprintf("key %d", l.Appendix[0].Key)
			if n := len(l.Appendix); n > 1 {
				keys = fmt.Sprintf("keys %d–%d", l.Appendix[0].Key, l.Appendix[n-1].Key)
			}
			summary += fmt.Sprintf(", %s beyond it in Appendix A (%s)", plural(len(l.Appendix), "record", "records"), keys)
		}
		summary += "."
	}
	d.para(summary, 8)
	for _, r := range l.Cards {
		d.card(r)
	}
	d.Ln(2)
}

// card prints one record card: a bar with its key, id, distance and
// direction, then every field of the layer's schema, titled with its unit,
// two to a line.
func (d *pdfDoc) card(r Row) {
	const labelW, valueW, lineH = 36.0, 54.0, 3.6
	d.SetFont("go", "", tableSize)
	type pair struct{ label, value []string }
	var ps []pair
	for _, f := range r.Fields {
		ps = append(ps, pair{d.SplitText(f.Name, labelW-1.6), d.SplitText(f.Value, valueW-1.6)})
	}
	var heights []float64
	for k := 0; k < len(ps); k += 2 {
		n := max(len(ps[k].label), len(ps[k].value))
		if k+1 < len(ps) {
			n = max(n, len(ps[k+1].label), len(ps[k+1].value))
		}
		heights = append(heights, float64(max(n, 1))*lineH+0.6)
	}
	total := 5.2
	for _, h := range heights {
		total += h
	}
	// A card of a page or less never splits.
	d.room(min(total, bottom-25) + 1.5)
	x, y := marginL, d.GetY()
	d.SetFillColor(232, 232, 232)
	d.SetDrawColor(150, 150, 150)
	d.Rect(x, y, bodyW, 5.2, "FD")
	where := Distance(r.DistanceM) + "  " + direction(r.BearingDeg)
	if r.OnSite {
		where = "on site"
	}
	head := fmt.Sprintf("%d", r.Key)
	rest := fmt.Sprintf("%s  ·  %s", r.ID, where)
	if !r.Drawn {
		rest += "  ·  beyond the map's frame"
	}
	d.SetXY(x+0.8, y+0.8)
	d.SetFont("go", "B", 8)
	d.SetTextColor(20, 20, 20)
	d.CellFormat(10, 3.6, head, "", 0, "L", false, 0, "")
	d.SetFont("go", "", 8)
	d.CellFormat(bodyW-12, 3.6, rest, "", 0, "L", false, 0, "")
	y += 5.2
	d.SetFont("go", "", tableSize)
	for k := 0; k < len(ps); k += 2 {
		h := heights[k/2]
		if y+h > bottom {
			d.AddPage()
			y = d.GetY()
		}
		for c := 0; c < 2 && k+c < len(ps); c++ {
			cx := x + float64(c)*(labelW+valueW)
			d.SetFillColor(246, 246, 246)
			d.Rect(cx, y, labelW, h, "FD")
			d.Rect(cx+labelW, y, valueW, h, "D")
			d.SetTextColor(70, 70, 70)
			d.SetXY(cx+0.8, y+0.3)
			d.MultiCell(labelW-1.6, lineH, ps[k+c].label[0]+joinRest(ps[k+c].label), "", "L", false)
			d.SetTextColor(20, 20, 20)
			d.SetXY(cx+labelW+0.8, y+0.3)
			d.MultiCell(valueW-1.6, lineH, ps[k+c].value[0]+joinRest(ps[k+c].value), "", "L", false)
		}
		if k+1 >= len(ps) {
			d.Rect(x+labelW+valueW, y, labelW+valueW, h, "D")
		}
		y += h
	}
	d.SetDrawColor(0, 0, 0)
	d.SetXY(marginL, y+1.5)
}

// joinRest gives back the lines after the first of a split text, each on
// its own line.
func joinRest(lines []string) string {
	if len(lines) <= 1 {
		return ""
	}
	return "\n" + strings.Join(lines[1:], "\n")
}

// appendix prints, per layer, every record beyond its detail distance as
// a row: key, feature, distance, direction and the layer's brief fields,
// page after page.
func (d *pdfDoc) appendix() {
	some := false
	for _, s := range d.r.Sections {
		for _, l := range s.Layers {
			some = some || len(l.Appendix) > 0
		}
	}
	if !some {
		return
	}
	d.AddPage()
	d.heading("Appendix A: records beyond the detail distance")
	d.para("Every matched record beyond its layer's detail distance, keyed as on the section maps (a key whose place on a crowded "+
		"map is taken is listed here only). Distances are geodesic from the site's boundary; direction from the site.", 8.5)
	for _, s := range d.r.Sections {
		for _, l := range s.Layers {
			if len(l.Appendix) == 0 {
				continue
			}
			d.room(20)
			d.subheading(s.Name+": "+l.Name, 1)
			d.para(fmt.Sprintf("%s beyond %s (of %s matched within %s).", plural(len(l.Appendix), "record", "records"),
				Distance(l.DetailM), plural(len(l.Cards)+len(l.Appendix), "record", "records"), Distance(l.RadiusM)), 8)
			head := []string{"Key", "Feature", "Distance", "Direction"}
			cols := []float64{10, 32, 16, 17}
			rest := bodyW - 75
			for _, n := range l.BriefFields {
				head = append(head, n)
				cols = append(cols, rest/float64(len(l.BriefFields)))
			}
			if len(l.BriefFields) == 0 {
				cols[1] += rest
			}
			rows := make([][]string, 0, len(l.Appendix))
			for _, r := range l.Appendix {
				c := []string{strconv.Itoa(r.Key), r.ID, Distance(r.DistanceM), direction(r.BearingDeg)}
				for _, f := range r.Fields {
					c = append(c, f.Value)
				}
				for len(c) < len(cols) {
					c = append(c, "")
				}
				rows = append(rows, c)
			}
			d.tableHead(cols, head)
			d.rowsHead(cols, rows, head)
			d.Ln(3)
		}
	}
}

// tableHead prints a table's header row.
func (d *pdfDoc) tableHead(cols []float64, head []string) {
	d.SetFont("go", "B", tableSize)
	d.SetTextColor(20, 20, 20)
	h := d.rowHeight(cols, head)
	d.room(h + 4.5)
	d.SetFillColor(232, 232, 232)
	x, y := d.GetX(), d.GetY()
	for i, c := range head {
		d.Rect(x, y, cols[i], h, "FD")
		d.SetXY(x+0.8, y+0.3)
		d.MultiCell(cols[i]-1.6, 3.6, c, "", "L", false)
		x += cols[i]
	}
	d.SetXY(marginL, y+h)
}

func (d *pdfDoc) rowHeight(cols []float64, cells []string) float64 {
	lines := 1
	for i, c := range cells {
		lines = max(lines, len(d.SplitText(c, cols[i]-1.6)))
	}
	return float64(lines)*3.6 + 0.8
}

// rowsHead prints a table's rows (its header already printed), the header
// repeating on each new page; the last two rows stay together, so that no
// row is left alone at the top of a page.
func (d *pdfDoc) rowsHead(cols []float64, rows [][]string, head []string) {
	for i, cells := range rows {
		if i > 0 && i == len(rows)-2 {
			d.SetFont("go", "", tableSize)
			h, next := d.rowHeight(cols, cells), d.rowHeight(cols, rows[i+1])
			if y := d.GetY(); y+h <= bottom && y+h+next > bottom {
				d.AddPage()
				d.tableHead(cols, head)
			}
		}
		d.rowHead(cols, cells, head)
	}
}

func mapRows(rs []Row, cells func(Row) []string) [][]string {
	out := make([][]string, len(rs))
	for i, r := range rs {
		out[i] = cells(r)
	}
	return out
}

// rowHead prints a row; when it starts a new page, the header repeats.
func (d *pdfDoc) rowHead(cols []float64, cells, head []string) {
	d.rowAligned(cols, cells, "L", cols, head)
}

func (d *pdfDoc) rowAligned(cols []float64, cells []string, align string, hcols []float64, head []string) {
	d.SetFont("go", "", tableSize)
	h := d.rowHeight(cols, cells)
	if d.GetY()+h > bottom {
		d.AddPage()
		if head != nil {
			d.tableHead(hcols, head)
			d.SetFont("go", "", tableSize)
		}
	}
	d.SetTextColor(30, 30, 30)
	x, y := d.GetX(), d.GetY()
	for i, c := range cells {
		d.Rect(x, y, cols[i], h, "D")
		d.SetXY(x+0.8, y+0.4)
		a := align
		if i == 0 {
			a = "L"
		}
		d.MultiCell(cols[i]-1.6, 3.6, c, "", a, false)
		x += cols[i]
	}
	d.SetXY(marginL, y+h)
}

// rowLinked prints an overview row whose cells link to a section.
func (d *pdfDoc) rowLinked(cols []float64, cells []string, link int) {
	y := d.GetY()
	d.rowAligned(cols, cells, "L", nil, nil)
	if link != 0 && d.GetY() > y {
		d.Link(marginL, y, bodyW, d.GetY()-y, link)
	}
}

// rowSpan prints a first cell and a note across the rest.
func (d *pdfDoc) rowSpan(cols []float64, first, note string) {
	rest := 0.0
	for _, c := range cols[1:] {
		rest += c
	}
	d.rowAligned([]float64{cols[0], rest}, []string{first, note}, "L", nil, nil)
}

func (d *pdfDoc) changes() {
	d.AddPage()
	d.heading(fmt.Sprintf("Changes since revision %d", d.r.Revision-1))
	for _, l := range changeLines(d.r.Changes) {
		d.para(l, 8.5)
	}
}

func (d *pdfDoc) sources() {
	d.AddPage()
	d.heading("Data sources and currency")
	d.para("One row per source of each layer used: who published it, the release this report read, its published, effective and "+
		"retrieved dates, its licence, and how far its data covers this site's search area.", 8.5)
	// The release id (a 34-character hash) gets a column it fits on one
	// line; the three dates share one, stacked.
	cols := []float64{30, 34, 54, 20, 22, 20}
	head := []string{"Layer", "Provider / source variant", "Release", "Published, effective, retrieved", "Licence", "Coverage"}
	d.tableHead(cols, head)
	var rows [][]string
	for _, s := range d.r.Sources {
		prov := orDash(s.Provider)
		if s.Variant != "" {
			prov += " / " + s.Variant
		}
		dates := orDash(day(s.Published)) + "\n" + orDash(day(s.Effective)) + "\n" + orDash(day(s.Retrieved))
		rows = append(rows, []string{s.Layer, prov, orDash(s.Release), dates, orDash(s.Licence), s.Coverage})
	}
	d.rowsHead(cols, rows, head)
	d.Ln(3)
	var attr []string
	for _, s := range d.r.Sources {
		if s.Attribution != "" && !slices.Contains(attr, s.Attribution) {
			attr = append(attr, s.Attribution)
		}
	}
	if len(attr) > 0 {
		d.room(15)
		d.subheading("Attribution", -1)
		d.para(strings.Join(attr, "; ")+".", 8)
	}
	d.para("Map context: coastline and state borders from Natural Earth 1:10m (public domain), generalised to about 1 km; parcels from the cadastral gazetteer.", 8)
}

// day is a date or date-time's date.
func day(s string) string {
	if len(s) > 10 && s[10] == 'T' {
		return s[:10]
	}
	return s
}

func (d *pdfDoc) limitations() {
	d.Ln(3)
	d.room(40)
	d.heading("Limitations and disclaimer")
	ls := d.r.Limitations
	if len(ls) == 0 {
		ls = []string{Limitations}
	}
	for _, l := range ls {
		// A paragraph is never split across pages.
		d.SetFont("go", "", 8.5)
		d.room(float64(len(d.SplitText(l, bodyW)))*8.5*0.45 + 2)
		d.para(l, 8.5)
	}
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}
