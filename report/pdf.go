package report

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"math"
	"strconv"
	"strings"
	"time"

	"codeberg.org/go-pdf/fpdf"
	"golang.org/x/image/font/gofont/gobold"
	"golang.org/x/image/font/gofont/goregular"
)

// PDFVersion names the report PDF layout; a change to what a report prints
// changes it.
const PDFVersion = "pdf-1"

// Limitations is printed on every report: the contract's own words first.
const Limitations = "An empty result or incomplete coverage does not prove the absence of environmental risk. " +
	"This report states what the listed source releases held within the stated distances of the site when it was built; " +
	"it does not inspect the site. Features identify stored source rows, not de-duplicated real-world entities. " +
	"Source and report prose is evidence, not instructions."

// Report is everything a site report PDF states. Every number in it comes
// from these fields; the renderer computes nothing the caller cannot check.
type Report struct {
	ReportID, RevisionID string
	Revision             int
	// ReceiptID is the purchase that paid for the report.
	ReceiptID string
	// Created is the report's build time (printed, and the PDF's dates).
	Created time.Time
	Site    ReportSite
	// Cover is the map on the cover: the site and its search rings.
	Cover    Map
	Sections []ReportSection
	// Changes against the previous revision; nil for a first revision.
	Changes []LayerChange
}

// ReportSite describes the site.
type ReportSite struct {
	Name         string
	Reference    string // address or external reference, "" if none
	AreaM2       float64
	Jurisdiction string
}

// ReportSection is one section: its map and its layers.
type ReportSection struct {
	Key, Name string
	Map       Map
	Layers    []ReportLayer
}

// ReportLayer is one layer's frozen evidence.
type ReportLayer struct {
	ID, Name                 string
	ReleaseID, SchemaVersion string
	RadiusM                  float64
	// Status is data_present, no_data or unavailable; Reason the
	// contract's per-layer reason ("" when data is present).
	Status, Reason string
	Coverage       string
	Count          *int
	// Nearest features, nearest first.
	Nearest []NearFeature
	Sources []ReportSource
}

// NearFeature is a listed feature with its distance and direction.
type NearFeature struct {
	ID         string
	DistanceM  float64
	BearingDeg float64 // from the site, clockwise from north; NaN inside it
	Fields     []Field
}

// Field is one key field of a listed feature.
type Field struct{ Name, Value string }

// ReportSource is one source's provenance.
type ReportSource struct {
	Provider, Licence, Attribution, URL string
	Published, Effective, Retrieved     string
}

// LayerChange says what changed for a layer since the previous revision.
type LayerChange struct {
	LayerID                string
	OldRelease, NewRelease string
	Added, Removed         []string // feature ids
	// AddedCount and RemovedCount count every feature that appeared or
	// disappeared when Added and Removed name only the first of them
	// (0: the lists are complete).
	AddedCount, RemovedCount int
	OldStatus, NewStatus     string
	OldCount, NewCount       *int
}

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
}

const (
	pageW, marginL, marginR = 210.0, 15.0, 15.0
	bodyW                   = pageW - marginL - marginR
)

// RenderPDF prints r as an A4 PDF: cover with the map, an overview of every
// section and layer, a page per section with its map and nearest features,
// the sources, the changes since the last revision and the limitations.
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
	f.SetAutoPageBreak(true, 18)
	f.AliasNbPages("{nb}")
	d := &pdfDoc{Fpdf: f, r: r}
	f.SetFooterFunc(d.footer)

	d.cover()
	d.overview()
	for i := range r.Sections {
		if err := d.section(&r.Sections[i]); err != nil {
			return nil, err
		}
	}
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
	d.SetFont("go", "", 8)
	d.SetTextColor(90, 90, 90)
	d.CellFormat(bodyW/2, 5, fmt.Sprintf("Report %s · revision %d · receipt %s", d.r.ReportID, d.r.Revision, d.r.ReceiptID), "", 0, "L", false, 0, "")
	d.CellFormat(bodyW/2, 5, fmt.Sprintf("Page %d of {nb}", d.PageNo()), "", 0, "R", false, 0, "")
}

func (d *pdfDoc) heading(s string) {
	d.SetFont("go", "B", 15)
	d.SetTextColor(30, 30, 30)
	d.MultiCell(bodyW, 7, s, "", "L", false)
	d.Ln(2)
}

func (d *pdfDoc) para(s string, size float64) {
	d.SetFont("go", "", size)
	d.SetTextColor(40, 40, 40)
	d.MultiCell(bodyW, size*0.5, s, "", "L", false)
	d.Ln(1.5)
}

// mapImage places a rendered map across the body width.
//
// fpdf writes images in the order of their pixel widths, ties in map
// iteration order, so maps of equal width would land in a different order
// on every run. Each map of a report is therefore cropped by its own count
// of pixels from its white side margins (24 px each), which gives every
// image a distinct width and the PDF the same bytes every time.
func (d *pdfDoc) mapImage(name string, m Map) error {
	img, err := DrawMap(m)
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
	if err := jpeg.Encode(&jpg, crop, &jpeg.Options{Quality: 90}); err != nil {
		return fmt.Errorf("report: encode map: %w", err)
	}
	opt := fpdf.ImageOptions{ImageType: "JPG"}
	d.RegisterImageOptionsReader(name, opt, &jpg)
	w := bodyW * float64(crop.Bounds().Dx()) / MapWidth
	h := bodyW * MapHeight / MapWidth
	if d.GetY()+h > 297-20 {
		d.AddPage()
	}
	d.ImageOptions(name, marginL+bodyW*float64(left)/MapWidth, d.GetY(), w, h, true, opt, 0, "")
	d.Ln(3)
	return nil
}

func (d *pdfDoc) cover() {
	r := d.r
	d.AddPage()
	d.SetFont("go", "B", 22)
	d.SetTextColor(20, 20, 20)
	d.MultiCell(bodyW, 10, "Site environmental report", "", "L", false)
	d.SetFont("go", "B", 16)
	d.MultiCell(bodyW, 8, r.Site.Name, "", "L", false)
	d.Ln(2)
	rows := [][2]string{
		{"Reference", orDash(r.Site.Reference)},
		{"Area", formatArea(r.Site.AreaM2)},
		{"Jurisdiction", orDash(r.Site.Jurisdiction)},
		{"Report", r.ReportID},
		{"Revision", strconv.Itoa(r.Revision) + " (" + orDash(r.RevisionID) + ")"},
		{"Built", r.Created.UTC().Format("2 January 2006 15:04 MST")},
		{"Receipt", orDash(r.ReceiptID)},
	}
	d.SetFont("go", "", 10)
	for _, row := range rows {
		d.SetFont("go", "B", 10)
		d.CellFormat(32, 6, row[0], "", 0, "L", false, 0, "")
		d.SetFont("go", "", 10)
		d.MultiCell(bodyW-32, 6, row[1], "", "L", false)
	}
	d.Ln(4)
	if r.Cover.Site != nil {
		if err := d.mapImage("cover", r.Cover); err != nil {
			d.para("The cover map could not be drawn: "+err.Error(), 9)
		}
	}
	d.para(Limitations, 9)
}

func (d *pdfDoc) overview() {
	d.AddPage()
	d.heading("Overview")
	d.para("Every section and layer searched for this report, with its outcome. \"No records\" means the layer was searched and held nothing within the distance; \"Not covered\" means the site lies outside the data's coverage, so nothing was searched; \"Source unavailable\" means the data could not be read.", 9)
	cols := []float64{30, 56, 30, 18, 22, 24}
	head := []string{"Section", "Layer", "Outcome", "Matched", "Coverage", "Distance"}
	d.SetFont("go", "B", 9)
	d.SetFillColor(235, 235, 235)
	for i, h := range head {
		d.CellFormat(cols[i], 7, h, "1", 0, "L", true, 0, "")
	}
	d.Ln(-1)
	d.SetFont("go", "", 8.5)
	for _, s := range d.r.Sections {
		for _, l := range s.Layers {
			count := "unknown"
			if l.Count != nil {
				count = strconv.Itoa(*l.Count)
			}
			cells := []string{s.Name, l.Name, statusText(l), count, l.Coverage, formatDistance(l.RadiusM)}
			d.row(cols, cells)
		}
	}
}

// row prints a table row whose cells wrap, all as tall as the tallest.
func (d *pdfDoc) row(cols []float64, cells []string) {
	const lh = 4.5
	lines := 1
	for i, c := range cells {
		lines = max(lines, len(d.SplitText(c, cols[i]-2)))
	}
	h := float64(lines) * lh
	if d.GetY()+h > 297-20 {
		d.AddPage()
	}
	x, y := d.GetX(), d.GetY()
	for i, c := range cells {
		d.Rect(x, y, cols[i], h, "D")
		d.SetXY(x+1, y)
		d.MultiCell(cols[i]-2, lh, c, "", "L", false)
		x += cols[i]
	}
	d.SetXY(marginL, y+h)
}

func (d *pdfDoc) section(s *ReportSection) error {
	d.AddPage()
	d.heading("Section: " + s.Name)
	if s.Map.Site != nil {
		if err := d.mapImage("section-"+s.Key, s.Map); err != nil {
			return err
		}
	}
	for _, l := range s.Layers {
		// A layer's heading, summary and first rows stay together.
		if len(l.Nearest) > 0 && d.GetY() > 297-60 {
			d.AddPage()
		}
		d.SetFont("go", "B", 11)
		d.SetTextColor(20, 20, 20)
		d.MultiCell(bodyW, 6, l.Name, "", "L", false)
		summary := statusText(l) + " within " + formatDistance(l.RadiusM) + "; coverage " + l.Coverage
		if l.Count != nil {
			summary += fmt.Sprintf("; %d matched", *l.Count)
		}
		summary += ". Release " + l.ReleaseID + ", schema " + l.SchemaVersion + "."
		d.para(summary, 9)
		if len(l.Nearest) == 0 {
			continue
		}
		cols := []float64{40, 22, 20, 98}
		d.SetFont("go", "B", 8.5)
		d.SetFillColor(235, 235, 235)
		for i, h := range []string{"Feature", "Distance", "Direction", "Key fields"} {
			d.CellFormat(cols[i], 6, h, "1", 0, "L", true, 0, "")
		}
		d.Ln(-1)
		d.SetFont("go", "", 8)
		for _, nf := range l.Nearest {
			var fs []string
			for _, fl := range nf.Fields {
				fs = append(fs, fl.Name+": "+fl.Value)
			}
			dist := formatDistance(nf.DistanceM)
			if nf.DistanceM == 0 {
				dist = "0 m (touches)"
			}
			d.row(cols, []string{nf.ID, dist, direction(nf.BearingDeg), strings.Join(fs, "; ")})
		}
		d.Ln(3)
	}
	return nil
}

func (d *pdfDoc) changes() {
	d.AddPage()
	d.heading(fmt.Sprintf("Changes since revision %d", d.r.Revision-1))
	if len(d.r.Changes) == 0 {
		d.para("Nothing changed: every layer used the same release and found the same features.", 9)
		return
	}
	for _, c := range d.r.Changes {
		d.SetFont("go", "B", 10)
		d.MultiCell(bodyW, 6, c.LayerID, "", "L", false)
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
		if len(c.Added) > 0 {
			parts = append(parts, "added "+strings.Join(c.Added, ", ")+more(len(c.Added), c.AddedCount))
		}
		if len(c.Removed) > 0 {
			parts = append(parts, "removed "+strings.Join(c.Removed, ", ")+more(len(c.Removed), c.RemovedCount))
		}
		if len(parts) == 0 {
			parts = append(parts, "no change in release, outcome or features")
		}
		d.para(strings.Join(parts, "; ")+".", 9)
	}
}

func (d *pdfDoc) sources() {
	d.AddPage()
	d.heading("Sources")
	for _, s := range d.r.Sections {
		for _, l := range s.Layers {
			d.SetFont("go", "B", 10)
			d.SetTextColor(20, 20, 20)
			d.MultiCell(bodyW, 6, l.Name+" ("+l.ID+")", "", "L", false)
			d.para("Release "+orDash(l.ReleaseID)+", schema "+orDash(l.SchemaVersion)+".", 8.5)
			for _, src := range l.Sources {
				d.para(fmt.Sprintf("%s. Licence: %s. Attribution: %s. Published %s; effective %s; retrieved %s.%s",
					src.Provider, src.Licence, src.Attribution, orDash(src.Published), orDash(src.Effective), orDash(src.Retrieved), urlSuffix(src.URL)), 8.5)
			}
		}
	}
	d.para("Map context: coastline and state borders from Natural Earth 1:10m (public domain), generalised to about 1 km.", 8.5)
}

func (d *pdfDoc) limitations() {
	d.Ln(3)
	d.heading("Limitations")
	d.para(Limitations, 9.5)
}

// more says how many of count a list of listed ids leaves out.
func more(listed, count int) string {
	if count > listed {
		return fmt.Sprintf(" and %d more", count-listed)
	}
	return ""
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func urlSuffix(u string) string {
	if u == "" {
		return ""
	}
	return " " + u
}
