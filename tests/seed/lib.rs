//! The seed of every randomized test in the workspace, from one place.
//!
//! Each randomized test draws from [`rng`] (a generator) or [`runner`] (a proptest
//! runner), named after the test. Both are seeded from one run seed: a fixed default,
//! so that every run of the suite draws the same values, or the value of
//! `DOCSHAPE_TEST_SEED` (decimal or `0x` hex) to explore others. The test's name is
//! mixed in, so that two tests do not draw the same stream. When a test fails, the
//! value to set to replay it is printed with the failure.

use std::ops::{Deref, DerefMut};

use proptest::test_runner::{Config, RngAlgorithm, RngSeed, TestRng, TestRunner};

/// The environment variable that overrides the run seed.
pub const VAR: &str = "DOCSHAPE_TEST_SEED";

/// The run seed when [`VAR`] is unset: the same on every run.
pub const DEFAULT: u64 = 0x646f_6373_6861_7065;

/// The run seed: [`VAR`] when set, else [`DEFAULT`].
///
/// # Panics
/// When [`VAR`] is set to something that is not a number: a seed that was meant and
/// silently ignored would replay nothing.
pub fn run_seed() -> u64 {
    match std::env::var(VAR) {
        Err(_) => DEFAULT,
        Ok(text) => parse(&text).unwrap_or_else(|| panic!("{VAR}={text:?} is not a decimal or 0x-hex u64")),
    }
}

fn parse(text: &str) -> Option<u64> {
    let text = text.trim();
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// The seed of the test `name` in this run: the run seed mixed with the name (FNV-1a),
/// so that each test has a stream of its own.
pub fn seed_for(name: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in name.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    run_seed() ^ hash
}

/// What a failing test prints: the run seed, and how to replay it.
fn report(name: &str) {
    eprintln!("{name}: randomized with run seed {:#x}; replay with {VAR}={:#x}", run_seed(), run_seed());
}

/// A value that prints its test's seed when the test panics while it is alive.
#[derive(Debug)]
pub struct Seeded<T> {
    inner: T,
    name: String,
}

impl<T> Seeded<T> {
    /// The seed of the test this value belongs to.
    pub fn seed(&self) -> u64 {
        seed_for(&self.name)
    }
}

impl<T> Deref for Seeded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.inner
    }
}

impl<T> DerefMut for Seeded<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.inner
    }
}

impl<T> Drop for Seeded<T> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            report(&self.name);
        }
    }
}

/// proptest's generator for the test `name`, seeded from the run seed.
pub fn rng(name: &str) -> Seeded<TestRng> {
    let seed = seed_for(name);
    let bytes: Vec<u8> = seed.to_le_bytes().iter().chain(&(!seed).to_le_bytes()).copied().collect();
    Seeded { inner: TestRng::from_seed(RngAlgorithm::XorShift, &bytes), name: name.to_owned() }
}

/// proptest's configuration for the test `name`: `cases` cases, seeded from the run
/// seed, and no regression files written into the source tree (a failure prints the
/// seed that replays it instead).
pub fn config(name: &str, cases: u32) -> Config {
    Config { cases, rng_seed: RngSeed::Fixed(seed_for(name)), failure_persistence: None, ..Config::default() }
}

/// A proptest runner for the test `name` with `cases` cases (see [`config`]); when it
/// finds a failure, the test's panic message is preceded by the seed.
pub fn runner(name: &str, cases: u32) -> Seeded<TestRunner> {
    Seeded { inner: TestRunner::new(config(name, cases)), name: name.to_owned() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::Rng as _;

    #[test]
    fn seeds_parse_in_decimal_and_hex() {
        assert_eq!(parse("17"), Some(17));
        assert_eq!(parse(" 0x11 "), Some(17));
        assert_eq!(parse("0X11"), Some(17));
        assert_eq!(parse("x"), None);
    }

    #[test]
    fn a_name_gives_the_same_stream_each_time_and_two_names_two_streams() {
        let mut a = rng("a");
        let mut again = rng("a");
        let mut b = rng("b");
        let (x, y, z) = (a.next_u64(), again.next_u64(), b.next_u64());
        assert_eq!(x, y);
        assert_ne!(x, z);
        assert_eq!(a.next_u64(), again.next_u64());
    }
}
