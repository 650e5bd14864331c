//! How errors speak: a suggestion for a misspelt word, and the name of the design
//! rule an error enforces (so the waiver's spelling is at hand).

/// The candidate closest to `input`, if it is close enough to be a misspelling.
pub(crate) fn did_you_mean<'a>(input: &str, candidates: &[&'a str]) -> Option<&'a str> {
    fn distance(a: &str, b: &str) -> usize {
        let b: Vec<char> = b.chars().collect();
        let mut prev: Vec<usize> = (0..=b.len()).collect();
        for (i, ca) in a.chars().enumerate() {
            let mut cur = vec![i + 1];
            for (j, cb) in b.iter().enumerate() {
                let cost = usize::from(!ca.eq_ignore_ascii_case(cb));
                cur.push((prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1));
            }
            prev = cur;
        }
        prev[b.len()]
    }
    candidates
        .iter()
        .map(|c| (distance(input, c), *c))
        .filter(|(d, _)| *d <= 2.max(input.len() / 3))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// A design rule's message: it names the rule, so the waiver's spelling is at hand.
pub(crate) fn rule(name: &str, text: String) -> String {
    format!("docshape rule `{name}`: {text}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::types::BSON_TYPES;

    #[test]
    fn suggestions() {
        assert_eq!(did_you_mean("objectid", BSON_TYPES), Some("objectId"));
        assert_eq!(did_you_mean("integer", BSON_TYPES), None);
        assert_eq!(did_you_mean("strng", BSON_TYPES), Some("string"));
    }
}
