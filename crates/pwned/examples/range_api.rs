//! Mounts the HIBP range API in an application of one's own, under
//! `/pwned`, beside the application's other routes.
//!
//! ```text
//! cargo run -p seekless-pwned --features serve --example range_api [INDEX] [ADDRESS]
//! curl http://127.0.0.1:8080/pwned/range/5BAA6
//! ```
//!
//! Without INDEX it serves the built-in sample (common passwords, count 1).

use seekless_pwned::{Index, RangeApi, Served, sample};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (index, name) = match args.next() {
        Some(path) => (Index::open(&path)?, path),
        None => (sample::index()?, "the built-in sample".to_string()),
    };
    let address = args.next().unwrap_or_else(|| "127.0.0.1:8080".into());

    let api = RangeApi::new();
    let served = Served::new(index, name)?;
    served.verify()?; // `/health` answers 503 until the index is verified.
    api.put(served);

    let app = axum::Router::new()
        .route("/", axum::routing::get(|| async { "my application\n" }))
        .nest("/pwned", api.router());
    let listener = tokio::net::TcpListener::bind(&address).await?;
    println!(
        "listening on http://{}/pwned/range/5BAA6",
        listener.local_addr()?
    );
    axum::serve(listener, app).await?;
    Ok(())
}
