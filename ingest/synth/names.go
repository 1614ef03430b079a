package synth

import "slices"

// Name lists for streets, waterways and places. Plausible Australian names:
// native plants and birds, explorers and governors, English place names and
// the streets every town has.

var streetStems = []string{
	// plants
	"Banksia", "Wattle", "Acacia", "Jacaranda", "Waratah", "Bottlebrush", "Grevillea", "Boronia",
	"Melaleuca", "Eucalyptus", "Ironbark", "Stringybark", "Casuarina", "Kurrajong", "Lilly Pilly",
	"Bluegum", "Redgum", "Coolabah", "Mallee", "Myrtle", "Tea Tree", "Paperbark", "Brushbox",
	"Flame Tree", "Lomandra", "Hakea", "Callistemon", "Angophora", "Blackwood", "Sassafras",
	"Cedar", "Kauri", "Bunya", "Hoop Pine", "Illawarra", "Silky Oak", "Native Rose", "Fig Tree",
	// birds and animals
	"Kookaburra", "Currawong", "Lorikeet", "Rosella", "Brolga", "Jabiru", "Galah", "Corella",
	"Magpie", "Lyrebird", "Bellbird", "Whipbird", "Wren", "Robin", "Swallow", "Pelican",
	"Wallaby", "Wombat", "Koala", "Possum", "Echidna", "Platypus", "Emu", "Kingfisher",
	// explorers, governors, notable people
	"Hume", "Hovell", "Flinders", "Bass", "Sturt", "Mitchell", "Oxley", "Leichhardt", "Lawson",
	"Blaxland", "Wentworth", "Macquarie", "Phillip", "Hunter", "Bligh", "Darling", "Brisbane",
	"Kennedy", "Eyre", "Forrest", "Stuart", "Burke", "Wills", "Cunningham", "Banks", "Cook",
	"Parkes", "Barton", "Deakin", "Lalor", "Chisholm", "Lyons", "Curtin", "Chifley", "Menzies",
	"Florey", "Monash", "Mawson", "Lindsay", "Paterson", "Gilmore", "Dalley", "Boyd",
	// places and things every town has
	"Church", "Victoria", "King", "Queen", "George", "Elizabeth", "Albert", "William", "Edward",
	"Railway", "Station", "Park", "High", "Bridge", "Mill", "School", "Hill", "River", "Beach",
	"Ocean", "Lake", "Forest", "Market", "Union", "Pitt", "Bourke", "Collins",
	"Smith", "Wellington", "Nelson", "Raglan", "Hastings", "Clarence", "Gordon", "Stanley",
	"York", "Bathurst", "Goulburn", "Windsor", "Richmond", "Camden", "Surrey", "Kent", "Devon",
	"Cambridge", "Oxford", "Glenview", "Hillcrest", "Bellevue", "Fairview", "Mountain View",
	"Seaview", "Riverview", "Valley", "Ridge", "Orchard", "Vineyard", "Dairy", "Quarry",
	"Anzac", "Federation", "Jubilee", "Coronation", "Heritage", "Settlers", "Pioneer", "Drovers",
	"Bushranger", "Swagman", "Shearers", "Stockmans", "Billabong", "Waterhole", "Creek",
}

var streetTypes = []string{
	"Street", "Road", "Avenue", "Crescent", "Close", "Court", "Place", "Drive", "Parade",
	"Lane", "Way", "Terrace", "Grove", "Circuit", "Boulevard",
}

var streetTypeWeights = []float64{
	30, 14, 12, 7, 5, 5, 6, 6, 2,
	3, 3, 2, 2, 2, 1,
}

// highways of each state, for the main road of some localities.
var highways = map[string][]string{
	"NSW": {"Pacific Highway", "Hume Highway", "Princes Highway", "New England Highway", "Great Western Highway", "Newell Highway", "Mitchell Highway", "Olympic Highway", "Old Northern Road", "Pennant Hills Road", "Parramatta Road", "Windsor Road"},
	"VIC": {"Princes Highway", "Hume Freeway", "Calder Highway", "Western Highway", "Goulburn Valley Highway", "Midland Highway", "Nepean Highway", "Maroondah Highway", "Burwood Highway", "Sydney Road"},
	"QLD": {"Bruce Highway", "Warrego Highway", "Cunningham Highway", "New England Highway", "Capricorn Highway", "Flinders Highway", "Gympie Road", "Ipswich Road", "Logan Road", "Gold Coast Highway"},
	"SA":  {"Princes Highway", "Stuart Highway", "Sturt Highway", "Dukes Highway", "Main North Road", "Main South Road", "South Road", "Port Road", "Anzac Highway"},
	"WA":  {"Great Eastern Highway", "Great Northern Highway", "Albany Highway", "Brand Highway", "Forrest Highway", "South Western Highway", "Stirling Highway", "Canning Highway", "Wanneroo Road"},
	"TAS": {"Midland Highway", "Bass Highway", "Tasman Highway", "Lyell Highway", "Huon Highway", "Brooker Highway", "Channel Highway"},
	"NT":  {"Stuart Highway", "Arnhem Highway", "Victoria Highway", "Barkly Highway", "Tiger Brennan Drive", "Bagot Road"},
	"ACT": {"Northbourne Avenue", "Canberra Avenue", "Monaro Highway", "Barton Highway", "Federal Highway", "Tuggeranong Parkway", "Gungahlin Drive"},
}

// Waterway names: a stem anyone might give a creek anywhere, or the name of
// a real waterway of the feature's own area, so that a stream near
// Parramatta is Duck Creek or Toongabbie Creek, never the Yarra or the
// Torrens. waterwayStemsFor picks the list for a locality.
var genericWaterwayStems = []string{
	"Blackwater", "Sandy", "Stony", "Deep", "Spring", "Oaky", "Wattle", "Reedy", "Dry", "Rocky",
	"Muddy", "Emu", "Kangaroo", "Wallaby", "Dingo", "Swamp", "Brush", "Cattle", "Sheep", "Horse",
	"Bullock", "Dairy", "Mill", "Saltwater", "Freshwater", "Middle", "Little", "Back", "Gold",
	"Tin", "Fish", "Eel", "Cockatoo", "Parrot", "Pigeon", "Possum", "Wombat",
}

// localWaterwayStems are real waterways by region (regions' keys) or state.
var localWaterwayStems = map[string][]string{
	"greater-sydney": {"Duck", "Haslams", "Subiaco", "Vineyard", "Toongabbie", "Darling Mills", "Devlins", "Terrys",
		"Ropes", "Eastern", "South", "Prospect", "Cooks", "Georges", "Parramatta", "Lane Cove", "Hawkesbury",
		"Nepean", "Berowra", "Cattai", "Hacking", "Powells", "Salt Pan", "Alexandra Canal"},
	"NSW": {"Hunter", "Manning", "Macleay", "Clarence", "Richmond", "Tweed", "Shoalhaven", "Murrumbidgee",
		"Lachlan", "Macquarie", "Namoi", "Gwydir", "Darling", "Castlereagh", "Bega", "Moruya", "Hastings",
		"Nambucca", "Bellinger", "Williams", "Paterson", "Wollombi", "Wollondilly", "Cudgegong"},
	"ACT": {"Molonglo", "Murrumbidgee", "Ginninderra", "Tuggeranong", "Sullivans", "Jerrabomberra", "Yarralumla",
		"Cotter", "Gudgenby", "Queanbeyan", "Paddys"},
	"VIC": {"Yarra", "Werribee", "Barwon", "Maribyrnong", "Merri", "Moonee Ponds", "Kororoit", "Plenty",
		"Darebin", "Dandenong", "Gardiners", "Koonung", "Mullum Mullum", "Goulburn", "Loddon", "Campaspe",
		"Ovens", "Latrobe", "Snowy", "Glenelg", "Wimmera", "Kiewa", "Mitta Mitta", "Avoca"},
	"seq": {"Brisbane", "Bremer", "Logan", "Albert", "Pine", "Caboolture", "Oxley", "Norman", "Kedron",
		"Enoggera", "Bulimba", "Moggill", "Tingalpa", "Cabbage Tree", "Breakfast", "Nerang", "Coomera",
		"Maroochy", "Mooloolah", "Noosa", "Lockyer"},
	"QLD": {"Mary", "Burnett", "Fitzroy", "Burdekin", "Herbert", "Johnstone", "Barron", "Gilbert", "Flinders",
		"Diamantina", "Condamine", "Warrego", "Paroo", "Pioneer", "Ross", "Tully", "Mossman", "Normanby",
		"Mitchell", "Leichhardt", "Dawson", "Balonne"},
	"SA": {"Torrens", "Onkaparinga", "Sturt", "Gawler", "Little Para", "Field", "Brownhill", "Keswick",
		"Light", "Wakefield", "Broughton", "Murray", "Hindmarsh", "Inman", "Finniss", "Angas", "Bremer"},
	"perth-peel": {"Swan", "Canning", "Helena", "Southern", "Ellen", "Bennett", "Serpentine", "Murray",
		"Harvey", "Wungong", "Jane", "Bayswater"},
	"WA": {"Avon", "Blackwood", "Collie", "Preston", "Ord", "Fortescue", "Ashburton", "Gascoyne", "Fitzroy",
		"Moore", "Murchison", "Greenough", "Kalgan", "Warren", "Donnelly", "De Grey"},
	"TAS": {"Derwent", "Huon", "Tamar", "Mersey", "North Esk", "South Esk", "Jordan", "Coal", "Forth", "Leven",
		"Gordon", "Franklin", "Arthur", "Pieman", "Hobart", "New Town", "Meander", "Macquarie"},
	"NT": {"Daly", "Katherine", "Roper", "Adelaide", "Victoria", "Finniss", "Mary", "Elizabeth", "Rapid",
		"Howard", "Todd", "Finke", "McArthur", "Ludmilla", "Berrimah"},
}

// waterwayStemLists caches, per region or state key, the generic stems
// followed by the local ones.
var waterwayStemLists = func() map[string][]string {
	m := make(map[string][]string, len(localWaterwayStems)+1)
	for k, local := range localWaterwayStems {
		m[k] = append(append([]string(nil), genericWaterwayStems...), local...)
	}
	m[""] = genericWaterwayStems
	return m
}()

// waterwayStemsFor is the stem list for a stream near l: its region's real
// waterways when it lies in one of regions, else its state's.
func waterwayStemsFor(l *locality) []string {
	for key, r := range regions {
		if r.contains(l) {
			if s, ok := waterwayStemLists[key]; ok {
				return s
			}
		}
	}
	if s, ok := waterwayStemLists[l.State]; ok {
		return s
	}
	return waterwayStemLists[""]
}

var waterwayTypes = []string{"Creek", "Creek", "Creek", "River", "Gully", "Brook", "Rivulet", "Channel"}

var qldBasins = []string{
	"Brisbane River", "Logan-Albert Rivers", "Pine River", "Caboolture River", "Maroochy River",
	"Noosa River", "Mary River", "Burnett River", "Kolan River", "Fitzroy River", "Pioneer River",
	"Burdekin River", "Haughton River", "Ross River", "Herbert River", "Tully River",
	"Johnstone River", "Barron River", "Mossman River", "Normanby River", "Mitchell River",
	"Gilbert River", "Flinders River", "Leichhardt River", "Diamantina River", "Cooper Creek",
	"Warrego River", "Paroo River", "Condamine-Balonne", "Border Rivers", "Moonie River",
}

var vegetationFormations = []string{
	"Dry sclerophyll forests", "Wet sclerophyll forests", "Grassy woodlands", "Heathlands",
	"Rainforests", "Grasslands", "Forested wetlands", "Semi-arid woodlands", "Freshwater wetlands",
}

// threatenedCommunities are EPBC-listed ecological communities with the
// states and territories each occurs in, so that a community named near
// Darwin is one of the Top End's, never the Victorian Volcanic Plain's.
var threatenedCommunities = []struct {
	Name   string
	States []string
}{
	{"Cumberland Plain Shale Woodlands and Shale-Gravel Transition Forest", []string{"NSW"}},
	{"White Box-Yellow Box-Blakely's Red Gum Grassy Woodland and Derived Native Grassland", []string{"NSW", "QLD", "VIC", "SA", "ACT"}},
	{"Brigalow (Acacia harpophylla dominant and co-dominant)", []string{"QLD", "NSW"}},
	{"Littoral Rainforest and Coastal Vine Thickets of Eastern Australia", []string{"QLD", "NSW", "VIC"}},
	{"Coastal Swamp Oak (Casuarina glauca) Forest of New South Wales and South East Queensland", []string{"NSW", "QLD"}},
	{"Banksia Woodlands of the Swan Coastal Plain", []string{"WA"}},
	{"Grey Box (Eucalyptus microcarpa) Grassy Woodlands and Derived Native Grasslands of South-eastern Australia", []string{"NSW", "VIC", "SA", "QLD"}},
	{"Natural Temperate Grassland of the Victorian Volcanic Plain", []string{"VIC"}},
	{"Iron-grass Natural Temperate Grassland of South Australia", []string{"SA"}},
	{"Peppermint Box (Eucalyptus odorata) Grassy Woodland of South Australia", []string{"SA"}},
	{"Weeping Myall Woodlands", []string{"NSW", "QLD"}},
	{"Lowland Rainforest of Subtropical Australia", []string{"NSW", "QLD"}},
	{"Tasmanian Forests and Woodlands dominated by black gum or Brookers gum", []string{"TAS"}},
	{"Alpine Sphagnum Bogs and Associated Fens", []string{"NSW", "VIC", "TAS", "ACT"}},
	{"Natural Temperate Grassland of the South Eastern Highlands", []string{"NSW", "ACT"}},
	{"Coolibah - Black Box Woodlands of the Darling Riverine Plains and the Brigalow Belt South Bioregions", []string{"NSW", "QLD"}},
	{"Eastern Stirling Range Montane Heath and Thicket", []string{"WA"}},
	{"Monsoon vine thickets on the coastal sand dunes of Dampier Peninsula", []string{"WA"}},
	{"Arnhem Plateau Sandstone Shrubland Complex", []string{"NT"}},
}

// threatenedCommunityNames are every community's name (the field's enum).
func threatenedCommunityNames() []string {
	out := make([]string, len(threatenedCommunities))
	for i, c := range threatenedCommunities {
		out[i] = c.Name
	}
	return out
}

// threatenedCommunitiesIn are the communities occurring in state (every
// community when none is listed there).
func threatenedCommunitiesIn(state string) []string {
	var out []string
	for _, c := range threatenedCommunities {
		if slices.Contains(c.States, state) {
			out = append(out, c.Name)
		}
	}
	if len(out) == 0 {
		return threatenedCommunityNames()
	}
	return out
}

var contaminationActivities = []string{
	"Service Station", "Landfill", "Gasworks", "Chemical Industry", "Metal Industry",
	"Other Petroleum", "Dry Cleaning", "Unclassified", "Other Industry", "Waste Treatment",
}

var heritageItems = []string{
	"Post Office", "Court House", "Railway Station Group", "School of Arts", "Police Station",
	"Town Hall", "Anglican Church", "Catholic Church and Presbytery", "Uniting Church",
	"Masonic Hall", "War Memorial", "Hotel", "Bank of New South Wales (former)", "Cottage",
	"Terrace Group", "Homestead", "Woolshed", "Flour Mill (former)", "Gaol (former)",
	"Cemetery", "Reservoir", "Pumping Station", "Bridge over the River", "Park and Rotunda",
}
