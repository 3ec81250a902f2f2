//! Geohashes as Redis's geo commands compute them, bit for bit.
//!
//! A position becomes a cell of a grid: the longitude range and the latitude range
//! are each cut into 2^step equal slices, and the two slice numbers, interleaved bit
//! by bit (latitude in the even bits, longitude in the odd ones), are the cell's
//! bits. At the finest step, 26, those 52 bits are the sorted-set score of a geo
//! member. Redis indexes latitudes within ±85.05112878 only (the Web Mercator
//! limit) and turns a cell back into the position of its centre; GEOHASH strings
//! re-encode that centre over the standard ±90 range.
//!
//! A search ([`Shape`]) scans a few cells of a coarser grid: the one holding the
//! centre and its eight neighbours, at a step estimated from the shape's size, minus
//! the neighbours Redis proves useless or repeated ([`Shape::cells`]). Each cell is
//! one score range of the sorted set; its members then go through the exact test
//! ([`Shape::distance_if_inside`]).
//!
//! The arithmetic keeps Redis's order of operations, and the trigonometry is the
//! platform's C library, so distances come out as the same doubles.

use std::f64::consts::PI;

pub const LON_MIN: f64 = -180.0;
pub const LON_MAX: f64 = 180.0;
pub const LAT_MIN: f64 = -85.05112878;
pub const LAT_MAX: f64 = 85.05112878;
/// The step of member scores: 26 bits per coordinate, 52 in all.
pub const STEP_MAX: u8 = 26;
pub const EARTH_RADIUS_M: f64 = 6372797.560856;
/// Half the circumference of the Mercator projection, in meters: the reference
/// the step estimate halves.
const MERCATOR_MAX: f64 = 20037726.37;
const DEG_TO_RAD: f64 = PI / 180.0;

const EVEN_BITS: u64 = 0x5555_5555_5555_5555;
const ODD_BITS: u64 = 0xaaaa_aaaa_aaaa_aaaa;

/// An interval of one coordinate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Span {
    pub min: f64,
    pub max: f64,
}

impl Span {
    fn width(self) -> f64 {
        self.max - self.min
    }

    fn excludes(self, v: f64) -> bool {
        v < self.min || v > self.max
    }
}

/// The longitudes and latitudes geo members can have.
pub const LON_SPAN: Span = Span {
    min: LON_MIN,
    max: LON_MAX,
};
pub const LAT_SPAN: Span = Span {
    min: LAT_MIN,
    max: LAT_MAX,
};
/// The latitude range of standard geohash strings.
const STANDARD_LAT_SPAN: Span = Span {
    min: -90.0,
    max: 90.0,
};

/// A rectangle of the globe.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Area {
    pub lon: Span,
    pub lat: Span,
}

/// One cell of the grid of a given step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cell {
    pub bits: u64,
    pub step: u8,
}

/// Spread the 32 bits of `v` over the even bits of a u64.
fn spread(v: u32) -> u64 {
    let mut x = u64::from(v);
    x = (x | x << 16) & 0x0000_ffff_0000_ffff;
    x = (x | x << 8) & 0x00ff_00ff_00ff_00ff;
    x = (x | x << 4) & 0x0f0f_0f0f_0f0f_0f0f;
    x = (x | x << 2) & 0x3333_3333_3333_3333;
    (x | x << 1) & EVEN_BITS
}

/// Gather the even bits of `v` into a u32: the inverse of [`spread`].
fn squash(v: u64) -> u32 {
    let mut x = v & EVEN_BITS;
    x = (x | x >> 1) & 0x3333_3333_3333_3333;
    x = (x | x >> 2) & 0x0f0f_0f0f_0f0f_0f0f;
    x = (x | x >> 4) & 0x00ff_00ff_00ff_00ff;
    x = (x | x >> 8) & 0x0000_ffff_0000_ffff;
    (x | x >> 16) as u32
}

/// The cell of the grid over `lon_span` × `lat_span` holding the position, or
/// `None` outside either the spans or the indexable range.
pub fn encode(lon_span: Span, lat_span: Span, lon: f64, lat: f64, step: u8) -> Option<Cell> {
    if LON_SPAN.excludes(lon) || LAT_SPAN.excludes(lat) {
        return None;
    }
    if lon_span.excludes(lon) || lat_span.excludes(lat) {
        return None;
    }
    let slices = (1u64 << step) as f64;
    let lat_slice = (lat - lat_span.min) / lat_span.width() * slices;
    let lon_slice = (lon - lon_span.min) / lon_span.width() * slices;
    // The top edge gives slice 2^step, one past the grid, as in Redis.
    let bits = spread(lat_slice as u32) | spread(lon_slice as u32) << 1;
    Some(Cell { bits, step })
}

/// The cell of a position on the grid of the indexable ranges.
pub fn encode_wgs84(lon: f64, lat: f64, step: u8) -> Option<Cell> {
    encode(LON_SPAN, LAT_SPAN, lon, lat, step)
}

/// The score of a geo member at the position (its finest cell), `None` outside the
/// indexable ranges.
pub fn score_of(lon: f64, lat: f64) -> Option<u64> {
    encode_wgs84(lon, lat, STEP_MAX).map(Cell::score)
}

/// A double as C converts it to an unsigned 64-bit integer on x86-64, where
/// values out of range do not saturate: negative values wrap around and values
/// from 2^64 on give 0. Scores of sorted sets that did not come from GEOADD decode
/// to the same (clamped) positions as in Redis.
fn c_double_to_u64(x: f64) -> u64 {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    /// The signed conversion instruction: out of range gives i64::MIN.
    fn truncate(x: f64) -> i64 {
        if (-TWO_63..TWO_63).contains(&x) {
            x as i64
        } else {
            i64::MIN
        }
    }
    if x < TWO_63 {
        truncate(x) as u64
    } else {
        truncate(x - TWO_63) as u64 ^ (1 << 63)
    }
}

impl Cell {
    /// The finest cell a member's score names.
    pub fn of_score(score: f64) -> Cell {
        Cell {
            bits: c_double_to_u64(score),
            step: STEP_MAX,
        }
    }

    /// The cell's bits moved to the top of 52: the lowest score inside it.
    pub fn score(self) -> u64 {
        self.bits << (52 - 2 * u32::from(self.step))
    }

    /// The scores of the members inside the cell: `start..end`.
    pub fn scores(self) -> (u64, u64) {
        let next = Cell {
            bits: self.bits.wrapping_add(1),
            step: self.step,
        };
        (self.score(), next.score())
    }

    /// The rectangle the cell covers on the grid over `lon_span` × `lat_span`.
    pub fn area(self, lon_span: Span, lat_span: Span) -> Area {
        let slices = (1u64 << self.step) as f64;
        let slice_span = |span: Span, slice: u32| Span {
            min: span.min + (f64::from(slice) / slices) * span.width(),
            max: span.min + (f64::from(slice.wrapping_add(1)) / slices) * span.width(),
        };
        Area {
            lon: slice_span(lon_span, squash(self.bits >> 1)),
            lat: slice_span(lat_span, squash(self.bits)),
        }
    }

    /// The cell `east` columns east (±1, 0) and `north` rows north, wrapping around
    /// the grid.
    fn moved(self, east: i8, north: i8) -> Cell {
        let bits = step_lane(self.bits, self.step, east, ODD_BITS);
        Cell {
            bits: step_lane(bits, self.step, north, EVEN_BITS),
            step: self.step,
        }
    }
}

/// Add `delta` (±1, or 0 for nothing) to the coordinate held in the `lane` bits of
/// `bits`, modulo 2^step. The other lane's bits within the cell are filled with
/// ones so that a carry or borrow runs through them; the other lane is kept as it
/// was, bits above the cell included (as Redis leaves them).
fn step_lane(bits: u64, step: u8, delta: i8, lane: u64) -> u64 {
    if delta == 0 {
        return bits;
    }
    let unused = 64 - 2 * u32::from(step);
    let gaps = !lane >> unused;
    let own = bits & lane;
    let moved = if delta > 0 {
        own.wrapping_add(gaps + 1)
    } else {
        (own | gaps).wrapping_sub(gaps + 1)
    };
    (moved & (lane >> unused)) | (bits & !lane)
}

/// The centre of the cell a member's score names: (longitude, latitude), clamped
/// into the indexable ranges.
pub fn decode_score(score: f64) -> (f64, f64) {
    let area = Cell::of_score(score).area(LON_SPAN, LAT_SPAN);
    let lon = ((area.lon.min + area.lon.max) / 2.0).clamp(LON_MIN, LON_MAX);
    let lat = ((area.lat.min + area.lat.max) / 2.0).clamp(LAT_MIN, LAT_MAX);
    (lon, lat)
}

/// The 11-character standard geohash of a member's position. The grid has 52 bits,
/// ten characters' worth; the eleventh is always `0`.
pub fn geohash_string(score: f64) -> [u8; 11] {
    const ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";
    let (lon, lat) = decode_score(score);
    let bits = encode(LON_SPAN, STANDARD_LAT_SPAN, lon, lat, STEP_MAX).map_or(0, |c| c.bits);
    let mut text = [b'0'; 11];
    for (i, c) in text.iter_mut().take(10).enumerate() {
        *c = ALPHABET[((bits >> (52 - (i + 1) * 5)) & 0x1f) as usize];
    }
    text
}

fn deg_to_rad(deg: f64) -> f64 {
    deg * DEG_TO_RAD
}

fn rad_to_deg(rad: f64) -> f64 {
    rad / DEG_TO_RAD
}

/// The great-circle distance in meters between two positions (haversine), with
/// Redis's shortcut when the longitudes are the same.
pub fn distance(lon1: f64, lat1: f64, lon2: f64, lat2: f64) -> f64 {
    let lon1r = deg_to_rad(lon1);
    let lon2r = deg_to_rad(lon2);
    let v = ((lon2r - lon1r) / 2.0).sin();
    if v == 0.0 {
        return lat_distance(lat1, lat2);
    }
    let lat1r = deg_to_rad(lat1);
    let lat2r = deg_to_rad(lat2);
    let u = ((lat2r - lat1r) / 2.0).sin();
    let a = u * u + lat1r.cos() * lat2r.cos() * v * v;
    2.0 * EARTH_RADIUS_M * a.sqrt().asin()
}

/// The distance in meters between two latitudes on one meridian.
fn lat_distance(lat1: f64, lat2: f64) -> f64 {
    EARTH_RADIUS_M * (deg_to_rad(lat2) - deg_to_rad(lat1)).abs()
}

/// The size of a search area, in the request's unit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Extent {
    Radius(f64),
    Box { width: f64, height: f64 },
}

/// A search area: a circle or a box around a centre.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shape {
    pub lon: f64,
    pub lat: f64,
    pub extent: Extent,
    /// Meters per unit of the extent.
    pub to_meters: f64,
}

/// The centre cell and its neighbours in Redis's scan order; a neighbour found
/// useless is `None`.
type Neighbourhood = [Option<Cell>; 9];

/// (east, north) moves from the centre cell, in scan order: centre, N, S, E, W,
/// NE, NW, SE, SW.
const SCAN_ORDER: [(i8, i8); 9] = [
    (0, 0),
    (0, 1),
    (0, -1),
    (1, 0),
    (-1, 0),
    (1, 1),
    (-1, 1),
    (1, -1),
    (-1, -1),
];

impl Shape {
    /// The distance from the centre to the farthest point of the shape, in meters.
    fn reach_m(&self) -> f64 {
        let reach = match self.extent {
            Extent::Radius(r) => r,
            Extent::Box { width, height } => {
                ((width / 2.0) * (width / 2.0) + (height / 2.0) * (height / 2.0)).sqrt()
            }
        };
        reach * self.to_meters
    }

    /// The rectangle in degrees that holds the shape. At the box's top and bottom
    /// edges a meter spans different longitudes; the edge nearer the pole is the
    /// wider one.
    fn bounds(&self) -> Area {
        let (half_height, half_width) = match self.extent {
            Extent::Radius(r) => (r, r),
            Extent::Box { width, height } => (height / 2.0, width / 2.0),
        };
        let height = self.to_meters * half_height;
        let width = self.to_meters * half_width;
        let lat_delta = rad_to_deg(height / EARTH_RADIUS_M);
        let lon_delta_at = |lat: f64| rad_to_deg(width / EARTH_RADIUS_M / deg_to_rad(lat).cos());
        let lon_delta = if self.lat < 0.0 {
            lon_delta_at(self.lat - lat_delta)
        } else {
            lon_delta_at(self.lat + lat_delta)
        };
        Area {
            lon: Span {
                min: self.lon - lon_delta,
                max: self.lon + lon_delta,
            },
            lat: Span {
                min: self.lat - lat_delta,
                max: self.lat + lat_delta,
            },
        }
    }

    /// The cells whose members may be inside the shape, in the order Redis scans
    /// them. A cell equal to the one scanned before it is left out (huge radiuses
    /// make neighbours wrap onto each other), except right after the centre, which
    /// Redis never compares with.
    pub fn cells(&self) -> Vec<Cell> {
        let neighbourhood = self.neighbourhood();
        let mut cells = Vec::with_capacity(9);
        let mut last_scanned = 0;
        for (i, cell) in neighbourhood.iter().enumerate() {
            let Some(cell) = *cell else { continue };
            if last_scanned != 0 && neighbourhood[last_scanned] == Some(cell) {
                continue;
            }
            cells.push(cell);
            last_scanned = i;
        }
        cells
    }

    /// The centre's cell and its neighbours at the estimated step, one step coarser
    /// when the neighbours do not reach the bounds, without the neighbours on the
    /// far side of an edge of the centre cell that the bounds do not cross.
    fn neighbourhood(&self) -> Neighbourhood {
        let bounds = self.bounds();
        let mut step = estimate_step(self.reach_m(), self.lat);
        let mut cells = self.cells_at(step);
        let reaches_bounds = {
            let area = |cell: Option<Cell>| cell.map(|c| c.area(LON_SPAN, LAT_SPAN));
            let (north, south) = (area(cells[1]), area(cells[2]));
            let (east, west) = (area(cells[3]), area(cells[4]));
            !(north.is_some_and(|a| a.lat.max < bounds.lat.max)
                || south.is_some_and(|a| a.lat.min > bounds.lat.min)
                || east.is_some_and(|a| a.lon.max < bounds.lon.max)
                || west.is_some_and(|a| a.lon.min > bounds.lon.min))
        };
        if step > 1 && !reaches_bounds {
            step -= 1;
            cells = self.cells_at(step);
        }
        if step >= 2 {
            if let Some(centre) = cells[0] {
                drop_useless(&mut cells, centre.area(LON_SPAN, LAT_SPAN), bounds);
            }
        }
        cells
    }

    /// The centre's cell and its eight neighbours at `step`.
    fn cells_at(&self, step: u8) -> Neighbourhood {
        let centre = encode_wgs84(self.lon, self.lat, step);
        SCAN_ORDER.map(|(east, north)| centre.map(|c| c.moved(east, north)))
    }

    /// The distance in meters from the centre to a point, if the point is inside
    /// the shape. A box is tested on its latitude, then on the distance along the
    /// point's parallel, as Redis does.
    pub fn distance_if_inside(&self, lon: f64, lat: f64) -> Option<f64> {
        match self.extent {
            Extent::Radius(radius) => {
                let d = distance(self.lon, self.lat, lon, lat);
                if d > radius * self.to_meters {
                    return None;
                }
                Some(d)
            }
            Extent::Box { width, height } => {
                let (width_m, height_m) = (width * self.to_meters, height * self.to_meters);
                if lat_distance(lat, self.lat) > height_m / 2.0 {
                    return None;
                }
                if distance(lon, lat, self.lon, lat) > width_m / 2.0 {
                    return None;
                }
                Some(distance(self.lon, self.lat, lon, lat))
            }
        }
    }
}

/// Forget the neighbours beyond an edge of the centre cell that lies outside the
/// bounds: the shape cannot reach past it.
fn drop_useless(cells: &mut Neighbourhood, centre: Area, bounds: Area) {
    // Indexes into the scan order.
    const NORTH: [usize; 3] = [1, 5, 6];
    const SOUTH: [usize; 3] = [2, 7, 8];
    const EAST: [usize; 3] = [3, 5, 7];
    const WEST: [usize; 3] = [4, 6, 8];
    let sides = [
        (centre.lat.min < bounds.lat.min, SOUTH),
        (centre.lat.max > bounds.lat.max, NORTH),
        (centre.lon.min < bounds.lon.min, WEST),
        (centre.lon.max > bounds.lon.max, EAST),
    ];
    for (useless, side) in sides {
        if useless {
            side.iter().for_each(|&i| cells[i] = None);
        }
    }
}

/// The step whose cells are about as large as the search reach: the coarser, the
/// farther from the equator (where cells get narrow).
fn estimate_step(reach_m: f64, lat: f64) -> u8 {
    if reach_m == 0.0 {
        return STEP_MAX;
    }
    let mut step: i32 = 1;
    let mut range = reach_m;
    while range < MERCATOR_MAX {
        range *= 2.0;
        step += 1;
    }
    // Two steps coarser, so that the reach fits in most cases.
    step -= 2;
    if !(-66.0..=66.0).contains(&lat) {
        step -= 1;
        if !(-80.0..=80.0).contains(&lat) {
            step -= 1;
        }
    }
    step.clamp(1, i32::from(STEP_MAX)) as u8
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::long_double::format_f64_human;

    /// (longitude, latitude, score, GEOHASH, GEOPOS) as redis-server 7.0.15 gave
    /// them after GEOADD.
    const KNOWN: &[(f64, f64, u64, &str, &str, &str)] = &[
        (
            13.361389,
            38.115556,
            3479099956230698,
            "sqc8b49rny0",
            "13.36138933897018433",
            "38.11555639549629859",
        ),
        (
            -180.0,
            -85.05112878,
            0,
            "00bh0hbj200",
            "-179.99999731779098511",
            "-85.05112751263942528",
        ),
        (
            180.0,
            85.05112878,
            13510798882111488,
            "bp05b5048p0",
            "180",
            "85.0511287799999991",
        ),
        (
            0.0,
            0.0,
            3377699720527872,
            "s0000000000",
            "0.00000268220901489",
            "0.00000126736058093",
        ),
        (
            -0.1275,
            51.507222,
            2163557714840001,
            "gcpvj0e5m10",
            "-0.1274988055229187",
            "51.50722081469902491",
        ),
        (
            179.999999,
            -85.05112877,
            3002399751580330,
            "pbzupuzvrb0",
            "179.99999731779098511",
            "-85.05112751263942528",
        ),
        (
            -73.935242,
            40.730610,
            1791875640195835,
            "dr5rtwccpb0",
            "-73.93524438142776489",
            "40.73061047253818145",
        ),
        (
            151.2093,
            -33.8688,
            3252046221964352,
            "r3gx2f77bj0",
            "151.20929986238479614",
            "-33.86880091934155956",
        ),
    ];

    #[test]
    fn scores_hashes_and_positions_match_redis() {
        for &(lon, lat, score, hash, pos_lon, pos_lat) in KNOWN {
            assert_eq!(score_of(lon, lat), Some(score), "score of {lon},{lat}");
            assert_eq!(
                &geohash_string(score as f64),
                hash.as_bytes(),
                "hash of {lon},{lat}"
            );
            let (dlon, dlat) = decode_score(score as f64);
            assert_eq!(format_f64_human(dlon), pos_lon.as_bytes());
            assert_eq!(format_f64_human(dlat), pos_lat.as_bytes());
        }
    }

    #[test]
    fn positions_outside_the_indexable_ranges_have_no_score() {
        assert_eq!(score_of(180.000001, 0.0), None);
        assert_eq!(score_of(0.0, 85.05112879), None);
        assert_eq!(score_of(0.0, -85.05112879), None);
    }

    #[test]
    fn distances_match_redis() {
        let at = |i: usize| decode_score(KNOWN[i].2 as f64);
        let meters = |a: usize, b: usize| {
            let ((lon1, lat1), (lon2, lat2)) = (at(a), at(b));
            distance(lon1, lat1, lon2, lat2)
        };
        // GEODIST's replies, in m, km, mi and ft.
        assert_eq!(format!("{:.4}", meters(0, 7)), "16230616.4547");
        assert_eq!(format!("{:.4}", meters(6, 4) / 1000.0), "5565.9292");
        assert_eq!(format!("{:.4}", meters(3, 2) / 1609.34), "6562.2003");
        assert_eq!(format!("{:.4}", meters(1, 2) / 0.3048), "62072980.9353");
        assert_eq!(meters(0, 0), 0.0);
    }

    #[test]
    fn neighbours_wrap_around_the_grid() {
        let slices = |c: Cell| (squash(c.bits >> 1), squash(c.bits));
        let corner = Cell { bits: 0, step: 3 };
        assert_eq!(slices(corner.moved(1, 0)), (1, 0));
        assert_eq!(slices(corner.moved(-1, 0)), (7, 0));
        assert_eq!(slices(corner.moved(0, -1)), (0, 7));
        assert_eq!(slices(corner.moved(-1, 1)), (7, 1));
        let top = Cell {
            bits: spread(7) | spread(7) << 1,
            step: 3,
        };
        assert_eq!(slices(top.moved(1, 1)), (0, 0));
        assert_eq!(slices(top.moved(0, 0)), (7, 7));
    }

    #[test]
    fn cells_cover_score_ranges() {
        let cell = encode_wgs84(13.361389, 38.115556, 10).unwrap();
        let (start, end) = cell.scores();
        assert_eq!(end - start, 1 << 32);
        assert!((start..end).contains(&3479099956230698));
    }

    #[test]
    fn interleaving_round_trips() {
        for v in [0u32, 1, 0x3ff_ffff, 0xdead_beef, u32::MAX] {
            assert_eq!(squash(spread(v)), v);
            assert_eq!(spread(v) & ODD_BITS, 0);
        }
    }

    #[test]
    fn steps_follow_the_reach_and_the_latitude() {
        assert_eq!(estimate_step(0.0, 0.0), 26);
        assert_eq!(estimate_step(1.0, 0.0), 24);
        assert_eq!(estimate_step(1000.0, 0.0), 14);
        assert_eq!(estimate_step(1000.0, 70.0), 13);
        assert_eq!(estimate_step(1000.0, -81.0), 12);
        assert_eq!(estimate_step(1e9, 0.0), 1);
        assert_eq!(estimate_step(f64::INFINITY, 0.0), 1);
    }

    #[test]
    fn huge_searches_scan_no_cell_twice_in_a_row() {
        let shape = Shape {
            lon: 0.0,
            lat: 0.0,
            extent: Extent::Radius(20_000.0),
            to_meters: 1000.0,
        };
        let cells = shape.cells();
        assert!(cells.windows(2).skip(1).all(|w| w[0] != w[1]));
        assert!(cells.iter().all(|c| c.step == 1));
    }

    #[test]
    fn scores_convert_like_c_on_x86_64() {
        assert_eq!(c_double_to_u64(1.9), 1);
        assert_eq!(c_double_to_u64(-1.0), u64::MAX);
        assert_eq!(c_double_to_u64(1e30), 0);
        assert_eq!(c_double_to_u64(-1e30), 1 << 63);
        assert_eq!(c_double_to_u64(1.5e19), 15_000_000_000_000_000_000);
    }
}
