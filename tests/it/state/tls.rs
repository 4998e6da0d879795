//! The TLS forms: `rediss+sentinel://` speaks TLS to the sentinels and to
//! the master they name, `rediss+cluster://` to every node; the servers'
//! certificate is checked against the trusted ones (`SSL_CERT_FILE` here).

use std::path::Path;
use std::time::Duration;

use super::topology::{
    MASTER, NO_DISK, Node, REDIS, cli_tls, cluster_args, create_cluster, settle,
};
use super::trusted_only;
use crate::util::{free_port, path_str};

/// A certificate for 127.0.0.1 good for a client as for a server
/// (`node.pem`, with `server.key`): cluster nodes present it to each other.
fn node_certificate(pki: &crate::pki::Pki) {
    pki.openssl(&[
        "req",
        "-new",
        "-key",
        "server.key",
        "-out",
        "node.csr",
        "-subj",
        "/CN=127.0.0.1",
    ]);
    pki.sign_for_localhost("node", "node.cnf", "serverAuth,clientAuth");
}

/// What every TLS-only server here gets: its certificate, no plain port.
fn tls_args(pki: &Path, port: u16) -> Vec<String> {
    let mut a = super::tls_only(pki, "node.pem", port);
    a.extend(["--tls-replication", "yes"].map(String::from));
    a.extend(NO_DISK.map(String::from));
    a
}

#[test]
fn tls_forms_speak_tls_to_sentinels_masters_and_cluster_nodes() {
    let pki = crate::pki::Pki::new();
    node_certificate(&pki);
    let d = pki.dir.path();
    let ca = d.join("ca.pem");

    // A TLS-only master and a TLS-only sentinel watching it.
    let master_port = free_port();
    let mdir = d.join("master");
    std::fs::create_dir(&mdir).expect("dir");
    let _master = Node::spawn(REDIS.server, &mdir, master_port, &tls_args(d, master_port));
    let sentinel_port = free_port();
    let sdir = d.join("sentinel");
    std::fs::create_dir(&sdir).expect("dir");
    let mut conf = String::new();
    for pair in tls_args(d, sentinel_port).chunks(2) {
        if let [k, v] = pair
            && !matches!(k.as_str(), "--save" | "--appendonly")
        {
            conf.push_str(&format!("{} \"{v}\"\n", &k[2..]));
        }
    }
    conf.push_str(&format!(
        "dir {}\nsentinel monitor {MASTER} 127.0.0.1 {master_port} 1\n",
        path_str(&sdir)
    ));
    let file = sdir.join("sentinel.conf");
    std::fs::write(&file, conf).expect("sentinel.conf");
    let _sentinel = Node::spawn(REDIS.sentinel, &sdir, sentinel_port, &[path_str(&file)]);
    settle("the TLS sentinel", Duration::from_secs(20), || {
        cli_tls(
            REDIS,
            sentinel_port,
            &ca,
            &["SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER],
        )
        .contains(&master_port.to_string())
    });
    trusted_only(
        &format!("rediss+sentinel://127.0.0.1:{sentinel_port}/{MASTER}"),
        &ca,
    );

    // Three TLS-only masters, TLS on the cluster bus too.
    let nodes: Vec<Node> = (0..3)
        .map(|i| {
            let port = free_port();
            let dir = d.join(format!("node{i}"));
            std::fs::create_dir(&dir).expect("dir");
            let mut args = tls_args(d, port);
            args.extend(cluster_args(&["--tls-cluster", "yes"]));
            Node::spawn(REDIS.server, &dir, port, &args)
        })
        .collect();
    create_cluster(&nodes, "0", "a TLS cluster node", |p, words| {
        cli_tls(REDIS, p, &ca, words)
    });
    settle("the TLS cluster", Duration::from_secs(20), || {
        nodes
            .iter()
            .all(|n| cli_tls(REDIS, n.port, &ca, &["CLUSTER", "INFO"]).contains("cluster_state:ok"))
    });
    trusted_only(
        &format!("rediss+cluster://127.0.0.1:{}", nodes[1].port),
        &ca,
    );
}
