//! A backfill in a process of its own, for the test that kills it
//! (`versioning/finish.rs`): `backfill-child <uri> <database> <batch> <per-second>` runs
//! `versioning::backfill` of the profiles there and prints one line per progress event.
//! A `kill -9` of this process is what a crash or an OOM kill does to a backfill.

#[path = "profiles.rs"]
mod profiles;

use docshape::versioning::{self, BackfillOptions, Progress};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [uri, database, batch, rate] = args.as_slice() else {
        return Err("usage: backfill-child <uri> <database> <batch> <per-second>".into());
    };
    let client = docshape::mongodb::Client::with_uri_str(uri).await?;
    let db = client.database(database);
    let options = BackfillOptions::default()
        .batch_size(batch.parse()?)
        .max_per_second(rate.parse::<f64>()?)
        .progress(Progress::Events(std::sync::Arc::new(|e| println!("upgraded {}", e.upgraded))));
    let report = versioning::backfill::<profiles::Profile>(&db, options).await?;
    println!("end {:?}", report.end);
    Ok(())
}
