//! The geo commands over real connections: reply shapes in both protocols, every
//! option and error, the effects each write appends (GEOADD as the ZADD it
//! becomes, the STORE forms as themselves), searches against a brute-force model,
//! and the STORE forms that lock their own keys, under concurrency.
//!
//! The differential scripts (`tests/differential/geo_*.redis`) pin the same replies
//! byte for byte against a real redis-server, scan order included.

mod support;

use kvik_server::util::geohash;
use std::collections::BTreeSet;
use support::in_process::{drain, q, Kvik};
use support::RawConn;

const SICILY: &str = "GEOADD Sicily 13.361389 38.115556 Palermo 15.087269 37.502669 Catania";

fn expect(c: &mut RawConn, line: &str, reply: &str) {
    assert_eq!(q(c, line), reply, "{line}");
}

fn expect_error(c: &mut RawConn, line: &str, error: &str) {
    assert_eq!(q(c, line), format!("-{error}\r\n"), "{line}");
}

const PALERMO_POS: &str = "*2\r\n$20\r\n13.36138933897018433\r\n$20\r\n38.11555639549629859\r\n";
const CATANIA_POS: &str = "*2\r\n$20\r\n15.08726745843887329\r\n$20\r\n37.50266842333162032\r\n";

#[test]
fn reads_in_resp2() {
    let kvik = Kvik::start();
    let mut c = kvik.conn();
    expect(&mut c, SICILY, ":2\r\n");
    expect(
        &mut c,
        "ZSCORE Sicily Palermo",
        "$16\r\n3479099956230698\r\n",
    );
    expect(
        &mut c,
        "GEOPOS Sicily Palermo nosuch",
        &format!("*2\r\n{PALERMO_POS}*-1\r\n"),
    );
    expect(&mut c, "GEOPOS nokey a", "*1\r\n*-1\r\n");
    expect(&mut c, "GEOPOS Sicily", "*0\r\n");
    expect(
        &mut c,
        "GEOHASH Sicily Palermo nosuch",
        "*2\r\n$11\r\nsqc8b49rny0\r\n$-1\r\n",
    );
    expect(&mut c, "GEOHASH nokey a", "*1\r\n$-1\r\n");
    expect(
        &mut c,
        "GEODIST Sicily Palermo Catania",
        "$11\r\n166274.1516\r\n",
    );
    expect(
        &mut c,
        "GEODIST Sicily Palermo Catania km",
        "$8\r\n166.2742\r\n",
    );
    expect(
        &mut c,
        "GEODIST Sicily Palermo Catania MI",
        "$8\r\n103.3182\r\n",
    );
    expect(
        &mut c,
        "GEODIST Sicily Palermo Catania ft",
        "$11\r\n545518.8700\r\n",
    );
    expect(&mut c, "GEODIST Sicily Palermo nosuch", "$-1\r\n");
    expect(&mut c, "GEODIST nokey a b", "$-1\r\n");
}

#[test]
fn reply_shapes_in_resp3() {
    let kvik = Kvik::start();
    let mut c = kvik.conn();
    assert!(q(&mut c, "HELLO 3").starts_with('%'));
    q(&mut c, SICILY);
    expect(
        &mut c,
        "GEOPOS Sicily Palermo nosuch",
        "*2\r\n*2\r\n,13.36138933897018433\r\n,38.11555639549629859\r\n_\r\n",
    );
    // Distances stay bulk strings in RESP3.
    expect(
        &mut c,
        "GEODIST Sicily Palermo Catania km",
        "$8\r\n166.2742\r\n",
    );
    expect(&mut c, "GEODIST Sicily Palermo nosuch", "_\r\n");
    expect(&mut c, "GEOHASH Sicily nosuch", "*1\r\n_\r\n");
    expect(
        &mut c,
        "GEORADIUS Sicily 15 37 200 km WITHDIST WITHHASH WITHCOORD ASC",
        "*2\r\n*4\r\n$7\r\nCatania\r\n$7\r\n56.4413\r\n:3479447370796909\r\n\
         *2\r\n,15.08726745843887329\r\n,37.50266842333162032\r\n\
         *4\r\n$7\r\nPalermo\r\n$8\r\n190.4424\r\n:3479099956230698\r\n\
         *2\r\n,13.36138933897018433\r\n,38.11555639549629859\r\n",
    );
    expect(
        &mut c,
        "GEOSEARCH nokey FROMLONLAT 1 1 BYRADIUS 1 m",
        "*0\r\n",
    );
}

#[test]
fn search_options() {
    let kvik = Kvik::start();
    let mut c = kvik.conn();
    q(&mut c, SICILY);
    let both = "*2\r\n$7\r\nPalermo\r\n$7\r\nCatania\r\n";
    let nearest_first = "*2\r\n$7\r\nCatania\r\n$7\r\nPalermo\r\n";
    let catania = "*1\r\n$7\r\nCatania\r\n";
    expect(&mut c, "GEORADIUS Sicily 15 37 200 km", both);
    expect(
        &mut c,
        "GEORADIUS_RO Sicily 15 37 200 km ASC",
        nearest_first,
    );
    expect(&mut c, "GEORADIUS Sicily 15 37 200 km DESC", both);
    expect(&mut c, "GEORADIUS Sicily 15 37 100 km", catania);
    expect(&mut c, "GEORADIUS Sicily 15 37 100000 m", catania);
    expect(&mut c, "GEORADIUS Sicily 15 37 62.2 MI", catania);
    expect(&mut c, "GEORADIUS Sicily 15 37 328000 ft", catania);
    expect(&mut c, "GEORADIUS Sicily 15 37 200 km COUNT 1", catania);
    expect(
        &mut c,
        "GEORADIUS Sicily 15 37 200 km COUNT 1 DESC",
        "*1\r\n$7\r\nPalermo\r\n",
    );
    // ANY stops at the first found: Palermo's cell is scanned first here.
    expect(
        &mut c,
        "GEORADIUS Sicily 15 37 200 km COUNT 1 ANY",
        "*1\r\n$7\r\nPalermo\r\n",
    );
    expect(
        &mut c,
        "GEORADIUS Sicily 15 37 200 km WITHDIST ASC",
        "*2\r\n*2\r\n$7\r\nCatania\r\n$7\r\n56.4413\r\n*2\r\n$7\r\nPalermo\r\n$8\r\n190.4424\r\n",
    );
    expect(
        &mut c,
        "GEORADIUS Sicily 15 37 100 km WITHHASH",
        "*1\r\n*2\r\n$7\r\nCatania\r\n:3479447370796909\r\n",
    );
    expect(
        &mut c,
        "GEORADIUS Sicily 15 37 100 km WITHCOORD",
        &format!("*1\r\n*2\r\n$7\r\nCatania\r\n{CATANIA_POS}"),
    );
    expect(
        &mut c,
        "GEORADIUSBYMEMBER Sicily Palermo 200 km DESC",
        nearest_first,
    );
    expect(
        &mut c,
        "GEORADIUSBYMEMBER_RO Sicily Palermo 100 km",
        "*1\r\n$7\r\nPalermo\r\n",
    );
    expect(
        &mut c,
        "GEOSEARCH Sicily FROMMEMBER Catania BYRADIUS 170 km ASC",
        nearest_first,
    );
    expect(
        &mut c,
        "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 400 400 km",
        both,
    );
    expect(
        &mut c,
        "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 200 200 km",
        catania,
    );
    expect(
        &mut c,
        "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 1000 20 km",
        "*0\r\n",
    );
    expect(
        &mut c,
        "geosearch Sicily bybox 400 400 km fromlonlat 15 37 count 1",
        catania,
    );
    expect(
        &mut c,
        "GEOSEARCH nokey FROMMEMBER x BYRADIUS 1 km",
        "*0\r\n",
    );
    expect(&mut c, "GEORADIUSBYMEMBER nokey x abc km", "*0\r\n");
}

#[test]
fn errors() {
    let kvik = Kvik::start();
    let mut c = kvik.conn();
    q(&mut c, SICILY);
    q(&mut c, "SET str x");
    let wrongtype = "WRONGTYPE Operation against a key holding the wrong kind of value";
    let cases: &[(&str, &str)] = &[
        ("GEOADD e 181 0 a", "ERR invalid longitude,latitude pair 181.000000,0.000000"),
        ("GEOADD e 0 -85.06 a", "ERR invalid longitude,latitude pair 0.000000,-85.060000"),
        ("GEOADD e x 0 a", "ERR value is not a valid float"),
        ("GEOADD e 1 1 a 2", "ERR syntax error"),
        ("GEOADD e NX XX 1 1 a", "ERR syntax error"),
        ("GEOADD e GT 1 1 a", "ERR syntax error"),
        ("GEOADD str 1 1 a", wrongtype),
        ("GEOPOS str a", wrongtype),
        ("GEOHASH str a", wrongtype),
        ("GEODIST str a b", wrongtype),
        ("GEODIST Sicily a b parsec", "ERR unsupported unit provided. please use M, KM, FT, MI"),
        ("GEODIST Sicily a b km x", "ERR syntax error"),
        ("GEORADIUS str x 0 1 km", wrongtype),
        ("GEORADIUS Sicily 0 0 x km", "ERR need numeric radius"),
        ("GEORADIUS Sicily 0 0 -1 km", "ERR radius cannot be negative"),
        ("GEORADIUS Sicily 0 0 1 km COUNT 0", "ERR COUNT must be > 0"),
        ("GEORADIUS Sicily 0 0 1 km COUNT x", "ERR value is not an integer or out of range"),
        ("GEORADIUS Sicily 0 0 1 km ANY", "ERR the ANY argument requires COUNT argument"),
        ("GEORADIUS Sicily 0 0 1 km BYBOX 1 1 km", "ERR syntax error"),
        (
            "GEORADIUS Sicily 0 0 1 km STORE d WITHDIST",
            "ERR STORE option in GEORADIUS is not compatible with WITHDIST, WITHHASH and WITHCOORD options",
        ),
        ("GEORADIUS_RO Sicily 0 0 1 km STORE d", "ERR syntax error"),
        ("GEORADIUSBYMEMBER Sicily nosuch 1 km", "ERR could not decode requested zset member"),
        ("GEOSEARCH Sicily FROMMEMBER nosuch BYRADIUS 1 km", "ERR could not decode requested zset member"),
        ("GEOSEARCH Sicily FROMMEMBER Palermo BYBOX x 1 km", "ERR need numeric width"),
        ("GEOSEARCH Sicily FROMMEMBER Palermo BYBOX 1 x km", "ERR need numeric height"),
        ("GEOSEARCH Sicily FROMMEMBER Palermo BYBOX 1 -1 km", "ERR height or width cannot be negative"),
        ("GEOSEARCH Sicily FROMMEMBER Palermo FROMLONLAT 1 1 BYRADIUS 1 km", "ERR syntax error"),
        ("GEOSEARCH Sicily FROMLONLAT 1 1 BYRADIUS 1 km BYBOX 1 1 km", "ERR syntax error"),
        ("GEOSEARCH Sicily FROMLONLAT 1 1 BYRADIUS 1 km STOREDIST", "ERR syntax error"),
        (
            "geoSearch Sicily BYRADIUS 1 km ASC WITHDIST",
            "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for geoSearch",
        ),
        (
            "GEOSEARCH Sicily FROMLONLAT 1 1 ASC WITHDIST",
            "ERR exactly one of BYRADIUS and BYBOX can be specified for GEOSEARCH",
        ),
        (
            "GEOSEARCHSTORE d Sicily FROMLONLAT 1 1 BYRADIUS 1 km WITHHASH",
            "ERR GEOSEARCHSTORE is not compatible with WITHDIST, WITHHASH and WITHCOORD options",
        ),
        ("GEOSEARCHSTORE d Sicily FROMLONLAT 1 1 BYRADIUS 1 km STORE x", "ERR syntax error"),
        ("GEOSEARCHSTORE d str FROMLONLAT 1 1 BYRADIUS 1 km", wrongtype),
        ("GEOSEARCH Sicily FROMLONLAT 1 1 BYRADIUS 1 furlong", "ERR unsupported unit provided. please use M, KM, FT, MI"),
        ("GEOSEARCH Sicily FROMLONLAT 1 1", "ERR wrong number of arguments for 'geosearch' command"),
    ];
    for (line, error) in cases {
        expect_error(&mut c, line, error);
    }
    expect(&mut c, "EXISTS e d", ":0\r\n");
}

#[test]
fn geoadd_conditions_and_effects() {
    let kvik = Kvik::start();
    let rx = kvik.effects();
    let mut c = kvik.conn();
    let mut step = |line: &str, reply: &str, effects: &[&str]| {
        assert_eq!(q(&mut c, line), reply, "{line}");
        assert_eq!(drain(&rx), effects, "{line}");
    };
    step(
        SICILY,
        ":2\r\n",
        &["zadd Sicily 3479099956230698 Palermo 3479447370796909 Catania"],
    );
    step("GEOADD Sicily 13.361389 38.115556 Palermo", ":0\r\n", &[]);
    step("GEOADD Sicily XX 1 1 nobody", ":0\r\n", &[]);
    step("GEOADD Sicily NX 1 1 Palermo", ":0\r\n", &[]);
    step(
        "GEOADD Sicily xx CH 1 1 Palermo",
        ":1\r\n",
        &["zadd Sicily xx CH 3377822707026402 Palermo"],
    );
    step(
        "GEOADD Sicily nx 1 1 Palermo 2 2 Two",
        ":1\r\n",
        &["zadd Sicily nx 3377822707026402 Palermo 3378191666521995 Two"],
    );
    step(
        "GEOADD Sicily 200 1 bad",
        "-ERR invalid longitude,latitude pair 200.000000,1.000000\r\n",
        &[],
    );
}

#[test]
fn store_forms_write_and_propagate_as_themselves() {
    let kvik = Kvik::start();
    let rx = kvik.effects();
    let mut c = kvik.conn();
    q(&mut c, SICILY);
    drain(&rx);
    let mut step = |line: &str, reply: &str, effects: &[&str]| {
        assert_eq!(q(&mut c, line), reply, "{line}");
        assert_eq!(drain(&rx), effects, "{line}");
    };
    let radius_store = "GEORADIUS Sicily 15 37 200 km STORE dst";
    step(radius_store, ":2\r\n", &[radius_store]);
    step(
        "ZRANGE dst 0 -1 WITHSCORES",
        "*4\r\n$7\r\nPalermo\r\n$16\r\n3479099956230698\r\n$7\r\nCatania\r\n$16\r\n3479447370796909\r\n",
        &[],
    );
    let storedist = "GEORADIUSBYMEMBER Sicily Palermo 200 km STOREDIST dst2 COUNT 1 DESC";
    step(storedist, ":1\r\n", &[storedist]);
    step(
        "ZRANGE dst2 0 -1 WITHSCORES",
        "*2\r\n$7\r\nCatania\r\n$18\r\n166.27415156960032\r\n",
        &[],
    );
    let search_store = "GEOSEARCHSTORE dst3 Sicily FROMLONLAT 15 37 BYRADIUS 100 km STOREDIST";
    step(search_store, ":1\r\n", &[search_store]);
    step("ZSCORE dst3 Catania", "$18\r\n56.441257870158204\r\n", &[]);
    // Nothing found: the destination goes; nothing to delete: no effect.
    let empty = "GEOSEARCHSTORE dst3 Sicily FROMLONLAT 0 0 BYRADIUS 1 km";
    step(empty, ":0\r\n", &[empty]);
    step(empty, ":0\r\n", &[]);
    let missing = "GEORADIUS nokey 0 0 1 km STORE dst";
    step(missing, ":0\r\n", &[missing]);
    step(missing, ":0\r\n", &[]);
    step("EXISTS dst dst3", ":0\r\n", &[]);
    // The STORE keyword of the read-only forms is refused; plain searches write nothing.
    step(
        "GEORADIUS Sicily 15 37 200 km",
        "*2\r\n$7\r\nPalermo\r\n$7\r\nCatania\r\n",
        &[],
    );
}

/// Searches find exactly the members a brute-force scan finds, away from the
/// boundary (where the last bits of the distance decide).
#[test]
fn searches_match_a_brute_force_model() {
    let kvik = Kvik::start();
    let mut c = kvik.conn();
    let mut seed = 12345u64;
    let mut random = move || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut points = Vec::new();
    for i in 0..400 {
        let (lon, lat) = if i % 2 == 0 {
            (random() * 360.0 - 180.0, random() * 170.0 - 85.0)
        } else {
            (10.0 + random() * 4.0 - 2.0, 45.0 + random() * 4.0 - 2.0)
        };
        q(&mut c, &format!("GEOADD g {lon} {lat} p{i}"));
        let score = geohash::score_of(lon, lat).unwrap() as f64;
        points.push((format!("p{i}"), geohash::decode_score(score)));
    }
    for round in 0..60 {
        let (lon, lat) = if round % 3 == 0 {
            (random() * 360.0 - 180.0, random() * 170.0 - 85.0)
        } else {
            (10.0 + random() * 2.0 - 1.0, 45.0 + random() * 2.0 - 1.0)
        };
        let radius_km = [1.0, 20.0, 100.0, 500.0, 3000.0][round % 5];
        let reply = q(
            &mut c,
            &format!("GEOSEARCH g FROMLONLAT {lon} {lat} BYRADIUS {radius_km} km"),
        );
        let found: BTreeSet<&str> = reply
            .split("\r\n")
            .filter(|line| line.starts_with('p'))
            .collect();
        for (name, (plon, plat)) in &points {
            let d = geohash::distance(lon, lat, *plon, *plat) / 1000.0;
            if d < radius_km * 0.999 {
                assert!(
                    found.contains(name.as_str()),
                    "{name} at {d} km of {lon},{lat} r {radius_km}"
                );
            } else if d > radius_km * 1.001 {
                assert!(
                    !found.contains(name.as_str()),
                    "{name} at {d} km of {lon},{lat} r {radius_km}"
                );
            }
        }
    }
}

/// GEORADIUS ... STORE takes its own locks: stores from many clients into shared
/// destinations, while others write the sources, end consistent.
#[test]
fn store_forms_are_safe_under_concurrency() {
    let kvik = Kvik::start();
    let mut setup = kvik.conn();
    for i in 0..4 {
        q(&mut setup, &format!("GEOADD src{i} 10 10 a 10.01 10 b"));
    }
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let addr = kvik.addr().to_string();
            std::thread::spawn(move || {
                let mut c = RawConn::connect(&addr);
                for n in 0..200 {
                    let src = (t + n) % 4;
                    let reply = match n % 3 {
                        0 => q(
                            &mut c,
                            &format!("GEORADIUS src{src} 10 10 5 km STORE dst{}", n % 2),
                        ),
                        1 => q(
                            &mut c,
                            &format!("GEORADIUSBYMEMBER src{src} a 5 km STOREDIST dst{}", n % 2),
                        ),
                        _ => q(&mut c, &format!("GEOADD src{src} 10.001 10 m{n}")),
                    };
                    assert!(reply.starts_with(':'), "{reply}");
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    for d in 0..2 {
        let card = q(&mut setup, &format!("ZCARD dst{d}"));
        assert!(card != ":0\r\n", "dst{d} {card}");
    }
}
