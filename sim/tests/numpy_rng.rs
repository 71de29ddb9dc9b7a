//! Replays sim/tests/fixtures/numpy_rng/default_rng.jsonl (made by
//! scripts/numpy_rng_fixtures.py from NumPy itself) against `ale_sim::numpy_rng`: every seed
//! word, state and draw must match bit for bit.

use std::path::Path;

use ale_sim::numpy_rng::{Generator, Pcg64, SeedSequence};
use serde_json::Value;

const FIXTURE: &str = "tests/fixtures/numpy_rng/default_rng.jsonl";
/// Where the ziggurat's tail begins; the fixture must reach past it.
const NOR_R: f64 = 3.654_152_885_361_009;

fn lines() -> (Value, Vec<Value>) {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(FIXTURE))
        .expect("fixture missing: run scripts/numpy_rng_fixtures.py");
    let mut lines = text.lines().map(|l| serde_json::from_str(l).unwrap());
    let header: Value = lines.next().unwrap();
    (header, lines.collect())
}

fn hex_u64(v: &Value) -> u64 {
    u64::from_str_radix(v.as_str().unwrap(), 16).unwrap()
}

fn hex_u128(v: &Value) -> u128 {
    u128::from_str_radix(v.as_str().unwrap(), 16).unwrap()
}

fn hex_f64(v: &Value) -> f64 {
    f64::from_bits(hex_u64(v))
}

fn list(v: &Value) -> &[Value] {
    v.as_array().unwrap()
}

/// The seed's SeedSequence, through `new` where it fits in 128 bits, else through its words.
fn seed_sequence(seed: &str) -> SeedSequence {
    let digits = seed.strip_prefix("0x").unwrap();
    if digits.len() <= 32 {
        return SeedSequence::new(u128::from_str_radix(digits, 16).unwrap());
    }
    let words: Vec<u32> = digits
        .as_bytes()
        .rchunks(8)
        .map(|c| u32::from_str_radix(std::str::from_utf8(c).unwrap(), 16).unwrap())
        .collect();
    SeedSequence::from_words(&words)
}

fn fresh(seed: &SeedSequence) -> Generator {
    Generator::new(Pcg64::new(seed))
}

/// Compares as bits and says where the first difference is.
fn same_bits(what: &str, ours: &[u64], numpy: &[u64]) {
    assert_eq!(ours.len(), numpy.len(), "{what}: length");
    if let Some(i) = (0..ours.len()).find(|&i| ours[i] != numpy[i]) {
        panic!(
            "{what}[{i}]: ours {:#018x} ({}), numpy {:#018x} ({})",
            ours[i],
            f64::from_bits(ours[i]),
            numpy[i],
            f64::from_bits(numpy[i])
        );
    }
}

fn check_seed(line: &Value) -> usize {
    let seed = line["seed"].as_str().unwrap();
    let seq = seed_sequence(seed);
    let mut draws = 0;

    let pool: Vec<u32> = list(&line["pool"])
        .iter()
        .map(|w| w.as_u64().unwrap() as u32)
        .collect();
    assert_eq!(seq.pool().to_vec(), pool, "{seed}: pool");
    let state: Vec<u64> = list(&line["state"]).iter().map(hex_u64).collect();
    same_bits(
        &format!("{seed}: state"),
        &seq.generate_state_u64::<4>(),
        &state,
    );
    let pcg = Pcg64::new(&seq);
    let numpy_pcg = (hex_u128(&line["pcg"][0]), hex_u128(&line["pcg"][1]));
    assert_eq!(pcg.state(), numpy_pcg, "{seed}: PCG64 state, increment");

    let raw: Vec<u64> = list(&line["raw"]).iter().map(hex_u64).collect();
    let mut bits = Pcg64::new(&seq);
    let ours: Vec<u64> = raw.iter().map(|_| bits.next_u64()).collect();
    same_bits(&format!("{seed}: raw"), &ours, &raw);
    draws += raw.len();

    let mut floats = |name: &str, draw: &mut dyn FnMut(&mut Generator) -> f64| {
        let numpy: Vec<u64> = list(&line[name]).iter().map(hex_u64).collect();
        let mut rng = fresh(&seq);
        let ours: Vec<u64> = numpy.iter().map(|_| draw(&mut rng).to_bits()).collect();
        same_bits(&format!("{seed}: {name}"), &ours, &numpy);
        draws += numpy.len();
    };
    floats("random", &mut |rng| rng.random());
    floats("normal", &mut |rng| rng.standard_normal());

    let numpy: Vec<u64> = list(&line["uniform"]).iter().map(hex_u64).collect();
    let mut ours = vec![0.0; numpy.len()];
    fresh(&seq).fill_uniform(-0.1, 0.1, &mut ours);
    let ours: Vec<u64> = ours.iter().map(|x| x.to_bits()).collect();
    same_bits(&format!("{seed}: uniform"), &ours, &numpy);
    draws += numpy.len();

    for case in list(&line["integers"]) {
        let (low, high) = (int(&case[0]), int(&case[1]));
        let mut rng = fresh(&seq);
        for (i, v) in list(&case[2]).iter().enumerate() {
            assert_eq!(
                integers(&mut rng, low, high),
                int(v),
                "{seed}: integers({low}, {high})[{i}]"
            );
            draws += 1;
        }
    }

    let mut rng = fresh(&seq);
    for (i, call) in list(&line["mixed"]).iter().enumerate() {
        let at = format!("{seed}: mixed[{i}] {call}");
        let call = list(call);
        match call[0].as_str().unwrap() {
            "random" => same_bits(&at, &[rng.random().to_bits()], &[hex_u64(&call[1])]),
            "normal" => same_bits(
                &at,
                &[rng.standard_normal().to_bits()],
                &[hex_u64(&call[1])],
            ),
            "normal_at" => {
                let x = rng.normal(hex_f64(&call[1]), hex_f64(&call[2]));
                same_bits(&at, &[x.to_bits()], &[hex_u64(&call[3])]);
            }
            "raw" => same_bits(&at, &[rng.bit_generator().next_u64()], &[hex_u64(&call[1])]),
            "uniform" => {
                let x = rng.uniform(hex_f64(&call[1]), hex_f64(&call[2]));
                same_bits(&at, &[x.to_bits()], &[hex_u64(&call[3])]);
            }
            "uniform_n" => {
                let numpy: Vec<u64> = list(&call[3]).iter().map(hex_u64).collect();
                let mut xs = vec![0.0; numpy.len()];
                rng.fill_uniform(hex_f64(&call[1]), hex_f64(&call[2]), &mut xs);
                let ours: Vec<u64> = xs.iter().map(|x| x.to_bits()).collect();
                same_bits(&at, &ours, &numpy);
            }
            "integers" => assert_eq!(
                integers(&mut rng, int(&call[1]), int(&call[2])),
                int(&call[3]),
                "{at}"
            ),
            "closed" => {
                let (low, high) = (int(&call[1]), int(&call[2]));
                let (low, high) = (i64::try_from(low).unwrap(), i64::try_from(high).unwrap());
                assert_eq!(
                    i128::from(rng.integers_closed(low, high)),
                    int(&call[3]),
                    "{at}"
                );
            }
            other => panic!("{at}: unknown call {other}"),
        }
        draws += 1;
    }
    draws
}

/// An integer the fixture wrote as a JSON number: an i64, or 2^63 as an exclusive `high`.
fn int(v: &Value) -> i128 {
    v.as_i64()
        .map(i128::from)
        .or_else(|| v.as_u64().map(i128::from))
        .unwrap()
}

/// NumPy's `integers(low, high)`: through `integers` where `high` is an i64, through
/// `integers_closed` where only `high - 1` is; both ways where both are.
fn integers(rng: &mut Generator, low: i128, high: i128) -> i128 {
    let low = i64::try_from(low).unwrap();
    let closed_high = i64::try_from(high - 1).unwrap();
    match i64::try_from(high) {
        Ok(high) => {
            let v = rng.clone().integers_closed(low, closed_high);
            assert_eq!(rng.integers(low, high), v, "integers vs integers_closed");
            i128::from(v)
        }
        Err(_) => i128::from(rng.integers_closed(low, closed_high)),
    }
}

#[test]
fn every_seed_matches_numpy_bit_for_bit() {
    let (header, lines) = lines();
    assert_eq!(header["seeds"].as_u64(), Some(lines.len() as u64));
    assert!(lines.len() >= 60, "{} seeds", lines.len());
    let draws: usize = lines.iter().map(check_seed).sum();
    assert!(draws > 25_000, "{draws} draws");
}

#[test]
fn the_fixture_reaches_every_path_it_claims_to() {
    let (_, lines) = lines();
    let normals: Vec<f64> = lines
        .iter()
        .flat_map(|l| list(&l["normal"]).iter().map(hex_f64))
        .collect();
    let tail = normals.iter().filter(|x| x.abs() > NOR_R).count();
    assert!(tail >= 3, "{tail} normals in the tail");
    let seeds: Vec<&str> = lines.iter().map(|l| l["seed"].as_str().unwrap()).collect();
    for seed in ["0xffffffffffffffff", "0x100000000", "0x10000000000000000"] {
        assert!(seeds.contains(&seed), "{seed} missing");
    }
    // Seeds of more than four words, and of more than 128 bits.
    assert!(seeds.iter().any(|s| s.len() > 2 + 32));
}

#[test]
fn a_tampered_draw_is_caught() {
    let (_, lines) = lines();
    let mut line = lines[0].clone();
    let last = line["normal"].as_array_mut().unwrap().last_mut().unwrap();
    let bits = hex_u64(last) ^ 1;
    *last = Value::String(format!("{bits:016x}"));
    let err = std::panic::catch_unwind(|| check_seed(&line)).unwrap_err();
    let msg = err.downcast_ref::<String>().unwrap();
    assert!(msg.starts_with("0x0: normal[4999]"), "{msg}");
}
