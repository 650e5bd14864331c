//! Garbled inputs: ten thousand mutations of valid models and random attributes,
//! none of which makes the derive panic.

#[allow(unused_imports)]
use super::*;

/// Pieces the fuzzer splices in.
const VOCAB: &[&str] = &[
    "model",
    "validate",
    "embedded",
    "serde",
    "collection",
    "strict",
    "min_length",
    "max_length",
    "pattern",
    "minimum",
    "maximum",
    "exclusive_minimum",
    "exclusive_maximum",
    "min_items",
    "max_items",
    "unique_items",
    "allowed",
    "bson_type",
    "validation_level",
    "validation_action",
    "rename",
    "rename_all",
    "skip",
    "flatten",
    "tag",
    "content",
    "untagged",
    "transparent",
    "into",
    "with",
    "serialize_with",
    "skip_serializing_if",
    "rename_all_fields",
    "=",
    ",",
    "-",
    "#",
    "!",
    ":",
    "::",
    ";",
    "<",
    ">",
    "&",
    "'a",
    "\"\"",
    "\"(\"",
    "\"[\"",
    "\"strict\"",
    "\"camelCase\"",
    "\"bogus\"",
    "\"a.b\"",
    "\"$x\"",
    "\"system.x\"",
    "\"date\"",
    "\"Option::is_none\"",
    "0",
    "-1",
    "1.5",
    "-0.0",
    "1e308",
    "1e999",
    "18446744073709551615",
    "9223372036854775808",
    "-9223372036854775808",
    "true",
    "false",
    "'c'",
    "b\"x\"",
    "[]",
    "[1, \"a\"]",
    "[-1, 2.5]",
    "()",
    "(x)",
    "{}",
    "String",
    "i32",
    "u8",
    "f64",
    "Option<String>",
    "Vec<u8>",
    "[u8; 3]",
    "(i32, String)",
    "Box<Self>",
    "T",
    "struct",
    "enum",
    "union",
    "where",
    "pub",
    "fn",
    "impl",
    "r#type",
    "index",
    "access",
    "keys",
    "filter",
    "sort",
    "range",
    "fields",
    "paginate",
    "allow",
    "unserved",
    "reason",
    "expire_after",
    "\"30d\"",
    "\"-1s\"",
    "\"a.b.c\"",
    "\"a..b\"",
    "\".\"",
    "case_insensitive",
    "shard_key",
    "max_indexes",
    "partial_filter",
    "\"{}\"",
    "\"[1]\"",
    "desc",
    "asc",
    "\"hashed\"",
    "_id",
    "(desc)",
    "schema_version",
    "migrate",
    "v1",
    "v0",
    "document",
    "missing",
    "pattern",
    "kind",
    "ttl",
    "sliding",
    "note",
    "value",
    "\"none\"",
    "\"a:{b}\"",
    "\"a:{b}{c}\"",
    "\"{0..15}\"",
    "\"x:{0..0}\"",
    "\"cache:{a\"",
    "\"::\"",
    "\"*\"",
    "\"0s\"",
    "\"99999999999999999999d\"",
    "hash",
    "sorted_set",
    "sharded_counter",
    "counter",
    "Product",
    "key",
    "bucket",
    "outlier",
    "series",
    "period",
    "per",
    "max",
    "items",
    "time",
    "count",
    "max_bytes",
    "cap",
    "threshold",
    "overflow",
    "flag",
    "per_doc",
    "sum",
    "min",
    "\"day\"",
    "\"fortnight\"",
    "\"minute\"",
    "4294967296",
    "\"User::name\"",
    "\"User::\"",
    "\"::name\"",
    "\"async\"",
    "\"never\"",
    "\"5m\"",
    "Ref",
    "from",
    "via",
    "refresh",
    "max_stale",
    "on_delete",
    "\"clear\"",
    "unbounded_array",
    "lookup",
];

/// `#[key(...)]`'s keys, and one near miss.
const KEY_KEYS: &[&str] = &["pattern", "kind", "ttl", "sliding", "reason", "note", "value", "patern"];

/// proptest's generator: the workspace's seeded one (`docshape-test-seed`), which
/// prints the seed that replays a failure.
type Rng = proptest::test_runner::TestRng;

/// A number below `n`.
trait Below {
    fn below(&mut self, n: usize) -> usize;
}

impl Below for Rng {
    fn below(&mut self, n: usize) -> usize {
        (proptest::prelude::Rng::next_u64(self) % n as u64) as usize
    }
}

/// Splits source into lexemes the mutations work on.
fn lexemes(src: &str) -> Vec<String> {
    fn walk(ts: TokenStream, out: &mut Vec<String>) {
        for tt in ts {
            match tt {
                proc_macro2::TokenTree::Group(g) => {
                    let (open, close) = match g.delimiter() {
                        proc_macro2::Delimiter::Parenthesis => ("(", ")"),
                        proc_macro2::Delimiter::Brace => ("{", "}"),
                        proc_macro2::Delimiter::Bracket => ("[", "]"),
                        proc_macro2::Delimiter::None => ("", ""),
                    };
                    out.push(open.to_owned());
                    walk(g.stream(), out);
                    out.push(close.to_owned());
                }
                other => out.push(other.to_string()),
            }
        }
    }
    let mut out = Vec::new();
    walk(tokens(src), &mut out);
    out
}

fn garble(rng: &mut Rng) -> String {
    let mut lex = lexemes(SEEDS[rng.below(SEEDS.len())]);
    for _ in 0..=rng.below(4) {
        let at = rng.below(lex.len().max(1));
        match rng.below(5) {
            0 if !lex.is_empty() => {
                lex.remove(at);
            }
            1 => lex.insert(at, VOCAB[rng.below(VOCAB.len())].to_owned()),
            2 if !lex.is_empty() => lex[at] = VOCAB[rng.below(VOCAB.len())].to_owned(),
            3 if !lex.is_empty() => {
                let other = rng.below(lex.len());
                lex.swap(at, other);
            }
            _ if !lex.is_empty() => {
                let copy = lex[at].clone();
                lex.insert(at, copy);
            }
            _ => {}
        }
    }
    lex.join(" ")
}

/// A struct whose attributes are random sequences of keys and values.
fn random_attributes(rng: &mut Rng) -> String {
    let attr = |rng: &mut Rng| {
        let name = [
            "model",
            "validate",
            "embedded",
            "serde",
            "index",
            "access",
            "key",
            "bucket",
            "outlier",
            "embed",
            "reference",
            "denormalized",
        ][rng.below(12)];
        let mut body = Vec::new();
        for _ in 0..rng.below(5) {
            // `#[key]`'s own keys are at the end of the vocabulary.
            let key = if name == "key" && rng.below(4) > 0 {
                KEY_KEYS[rng.below(KEY_KEYS.len())]
            } else {
                VOCAB[rng.below(33)]
            };
            match rng.below(3) {
                0 => body.push(key.to_owned()),
                1 => body.push(format!("{key} = {}", VOCAB[33 + rng.below(VOCAB.len() - 33)])),
                _ => body.push(format!("{key}({})", VOCAB[rng.below(VOCAB.len())])),
            }
        }
        format!("#[{name}({})]", body.join(", "))
    };
    let container: Vec<String> = (0..rng.below(3)).map(|_| attr(rng)).collect();
    let mut fields = Vec::new();
    for i in 0..rng.below(4) {
        let attrs: Vec<String> = (0..rng.below(3)).map(|_| attr(rng)).collect();
        let ty = ["String", "i32", "u8", "f64", "Option<String>", "Vec<u8>", "[u8; 3]", "(i32, String)", "T"]
            [rng.below(9)];
        fields.push(format!("{} f{i}: {ty}", attrs.join(" ")));
    }
    let shape = match rng.below(4) {
        0 => format!("struct S<T> {{ {} }}", fields.join(", ")),
        1 => format!("enum E {{ A {{ {} }}, B(i32), C }}", fields.join(", ")),
        2 => "struct S(i32, String);".to_owned(),
        _ => format!("union U {{ {} }}", fields.join(", ")),
    };
    format!("{} {shape}", container.join(" "))
}

#[test]
fn ten_thousand_garbled_inputs_never_panic() {
    let cases: usize =
        std::env::var("DOCSHAPE_FUZZ_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(10_000);
    let mut rng = docshape_test_seed::rng("derive::garbled_inputs");
    let (mut expanded, mut errors) = (0, 0);
    while expanded < cases {
        let src = if expanded % 2 == 0 { garble(&mut rng) } else { random_attributes(&mut rng) };
        // Text that does not even tokenize never reaches a derive.
        let Ok(input) = TokenStream::from_str(&src) else { continue };
        for expand in [expand_model as fn(TokenStream) -> TokenStream, expand_embedded, expand_key_family] {
            let out = catch_unwind(AssertUnwindSafe(|| expand(input.clone())))
                .unwrap_or_else(|_| panic!("the derive panicked on:\n{src}"));
            if is_error(&out) {
                errors += 1;
            } else {
                // Whatever is not an error must be well-formed items.
                syn::parse2::<syn::File>(out.clone())
                    .unwrap_or_else(|e| panic!("malformed expansion ({e}) of:\n{src}\n{out}"));
            }
        }
        expanded += 1;
    }
    // Most garbled inputs are errors; a run where none were would test nothing.
    assert!(errors > cases / 2, "only {errors} error results");
}
