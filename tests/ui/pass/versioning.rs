//! A document step before typed steps, a custom missing version, a renamed version
//! field of another integer type: it compiles, and the chain runs. Rows over fields an
//! older version stores alike (or as an `Option` of the same type) compile, and so does
//! a row over a changed field whose rule is waived.

use docshape::bson::{doc, Document};
use docshape::versioning::{decode, Versioned};
use docshape::{Embedded, Model};
use serde::{Deserialize, Serialize};

#[derive(Debug, Serialize, Deserialize, Model)]
#[model(collection = "accounts", version = 4, migrate(v2(document = v2_to_v3), v3 = AccountV3))]
#[index(keys(email), unique)]
#[index(keys(verified))]
#[index(keys(plan))]
#[access(name = "by_email", filter(email))]
#[access(name = "by_plan", filter(plan))]
#[access(
    name = "unverified",
    filter(verified),
    allow(old_version_field, reason = "backfilled before the release that reads it")
)]
struct Account {
    email: String,
    plan: String,
    verified: bool,
    #[schema_version(missing = 2)]
    #[serde(rename = "_v")]
    version: u8,
}

#[derive(Serialize, Deserialize, Embedded)]
struct AccountV3 {
    email: String,
    plan: Option<String>,
}

impl From<AccountV3> for Account {
    fn from(a: AccountV3) -> Self {
        Account { email: a.email, plan: a.plan.unwrap_or_default(), verified: false, version: 0 }
    }
}

fn v2_to_v3(mut d: Document) -> Result<Document, std::convert::Infallible> {
    if let Some(mail) = d.remove("mail") {
        d.insert("email", mail);
    }
    Ok(d)
}

pub(super) fn main() {
    assert_eq!((Account::VERSION, Account::VERSION_FIELD, Account::MISSING_VERSION), (4, "_v", 2));
    let a: Account = decode(doc! { "mail": "a@b.c", "plan": "free" }).unwrap();
    assert_eq!((a.email.as_str(), a.verified, a.version), ("a@b.c", false, 4));
    let b: Account = decode(doc! { "email": "x@y.z", "plan": "pro", "verified": true, "_v": 4 }).unwrap();
    assert!(b.verified);
    assert!(decode::<Account>(doc! { "email": "x", "_v": 1 }).is_err());
}
