//! CLUSTER: kvik runs without cluster support, as Redis does with `cluster-enabled
//! no`. Every subcommand answers Redis's `This instance has cluster support disabled`;
//! the table still holds each one with Redis 7.0's arity, flags and documentation, so
//! that arity errors, COMMAND INFO and the noscript flag (scripts may not call
//! CLUSTER RESET) are Redis's.

use super::table::{acl, flags, Command};
use super::{CmdResult, Ctx};

/// What a subcommand that changes the cluster's configuration is flagged.
const CHANGES: u32 = flags::ADMIN | flags::STALE | flags::NO_ASYNC_LOADING;
const DANGEROUS: u32 = acl::ADMIN | acl::SLOW | acl::DANGEROUS;

const SUBCOMMANDS: &[Command] = &[
    Command::new("cluster|addslots", -3, disabled)
        .flags(CHANGES)
        .acl(DANGEROUS)
        .doc(
            "cluster",
            "3.0.0",
            "O(N) where N is the total number of hash slot arguments",
            "Assign new hash slots to receiving node",
        ),
    Command::new("cluster|addslotsrange", -4, disabled)
        .flags(CHANGES)
        .acl(DANGEROUS)
        .doc(
            "cluster",
            "7.0.0",
            "O(N) where N is the total number of the slots between the start slot and end slot arguments.",
            "Assign new hash slots to receiving node",
        ),
    Command::new("cluster|bumpepoch", 2, disabled)
        .flags(CHANGES)
        .acl(DANGEROUS)
        .tips(&["nondeterministic_output"])
        .doc(
            "cluster",
            "3.0.0",
            "O(1)",
            "Advance the cluster config epoch",
        ),
    Command::new("cluster|count-failure-reports", 3, disabled)
        .flags(flags::ADMIN | flags::STALE)
        .acl(DANGEROUS)
        .tips(&["nondeterministic_output"])
        .doc(
            "cluster",
            "3.0.0",
            "O(N) where N is the number of failure reports",
            "Return the number of failure reports active for a given node",
        ),
    Command::new("cluster|countkeysinslot", 3, disabled)
        .flags(flags::STALE)
        .acl(acl::SLOW)
        .doc(
            "cluster",
            "3.0.0",
            "O(1)",
            "Return the number of local keys in the specified hash slot",
        ),
    Command::new("cluster|delslots", -3, disabled)
        .flags(CHANGES)
        .acl(DANGEROUS)
        .doc(
            "cluster",
            "3.0.0",
            "O(N) where N is the total number of hash slot arguments",
            "Set hash slots as unbound in receiving node",
        ),
    Command::new("cluster|delslotsrange", -4, disabled)
        .flags(CHANGES)
        .acl(DANGEROUS)
        .doc(
            "cluster",
            "7.0.0",
            "O(N) where N is the total number of the slots between the start slot and end slot arguments.",
            "Set hash slots as unbound in receiving node",
        ),
    Command::new("cluster|failover", -2, disabled)
        .flags(CHANGES)
        .acl(DANGEROUS)
        .doc(
            "cluster",
            "3.0.0",
            "O(1)",
            "Forces a replica to perform a manual failover of its master.",
        ),
    Command::new("cluster|flushslots", 2, disabled)
        .flags(CHANGES)
        .acl(DANGEROUS)
        .doc(
            "cluster",
            "3.0.0",
            "O(1)",
            "Delete a node's own slots information",
        ),
    Command::new("cluster|forget", 3, disabled)
        .flags(CHANGES)
        .acl(DANGEROUS)
        .doc(
            "cluster",
            "3.0.0",
            "O(1)",
            "Remove a node from the nodes table",
        ),
    Command::new("cluster|getkeysinslot", 4, disabled)
        .flags(flags::STALE)
        .acl(acl::SLOW)
        .tips(&["nondeterministic_output"])
        .doc(
            "cluster",
            "3.0.0",
            "O(log(N)) where N is the number of requested keys",
            "Return local key names in the specified hash slot",
        ),
    Command::new("cluster|help", 2, disabled)
        .flags(flags::LOADING | flags::STALE)
        .acl(acl::SLOW)
        .doc(
            "cluster",
            "5.0.0",
            "O(1)",
            "Show helpful text about the different subcommands",
        ),
    Command::new("cluster|info", 2, disabled)
        .flags(flags::STALE)
        .acl(acl::SLOW)
        .tips(&["nondeterministic_output"])
        .doc(
            "cluster",
            "3.0.0",
            "O(1)",
            "Provides info about Redis Cluster node state",
        ),
    Command::new("cluster|keyslot", 3, disabled)
        .flags(flags::STALE)
        .acl(acl::SLOW)
        .doc(
            "cluster",
            "3.0.0",
            "O(N) where N is the number of bytes in the key",
            "Returns the hash slot of the specified key",
        ),
    Command::new("cluster|links", 2, disabled)
        .flags(flags::STALE)
        .acl(acl::SLOW)
        .tips(&["nondeterministic_output"])
        .doc(
            "cluster",
            "7.0.0",
            "O(N) where N is the total number of Cluster nodes",
            "Returns a list of all TCP links to and from peer nodes in cluster",
        ),
    Command::new("cluster|meet", -4, disabled)
        .flags(CHANGES)
        .acl(DANGEROUS)
        .doc(
            "cluster",
            "3.0.0",
            "O(1)",
            "Force a node cluster to handshake with another node",
        ),
    Command::new("cluster|myid", 2, disabled)
        .flags(flags::STALE)
        .acl(acl::SLOW)
        .doc(
            "cluster",
            "3.0.0",
            "O(1)",
            "Return the node id",
        ),
    Command::new("cluster|nodes", 2, disabled)
        .flags(flags::STALE)
        .acl(acl::SLOW)
        .tips(&["nondeterministic_output"])
        .doc(
            "cluster",
            "3.0.0",
            "O(N) where N is the total number of Cluster nodes",
            "Get Cluster config for the node",
        ),
    Command::new("cluster|replicas", 3, disabled)
        .flags(flags::ADMIN | flags::STALE)
        .acl(DANGEROUS)
        .tips(&["nondeterministic_output"])
        .doc(
            "cluster",
            "5.0.0",
            "O(1)",
            "List replica nodes of the specified master node",
        ),
    Command::new("cluster|replicate", 3, disabled)
        .flags(CHANGES)
        .acl(DANGEROUS)
        .doc(
            "cluster",
            "3.0.0",
            "O(1)",
            "Reconfigure a node as a replica of the specified master node",
        ),
    Command::new("cluster|reset", -2, disabled)
        .flags(flags::ADMIN | flags::NOSCRIPT | flags::STALE)
        .acl(DANGEROUS)
        .doc(
            "cluster",
            "3.0.0",
            "O(N) where N is the number of known nodes. The command may execute a FLUSHALL as a side effect.",
            "Reset a Redis Cluster node",
        ),
    Command::new("cluster|saveconfig", 2, disabled)
        .flags(CHANGES)
        .acl(DANGEROUS)
        .doc(
            "cluster",
            "3.0.0",
            "O(1)",
            "Forces the node to save cluster state on disk",
        ),
    Command::new("cluster|set-config-epoch", 3, disabled)
        .flags(CHANGES)
        .acl(DANGEROUS)
        .doc(
            "cluster",
            "3.0.0",
            "O(1)",
            "Set the configuration epoch in a new node",
        ),
    Command::new("cluster|setslot", -4, disabled)
        .flags(CHANGES)
        .acl(DANGEROUS)
        .doc(
            "cluster",
            "3.0.0",
            "O(1)",
            "Bind a hash slot to a specific node",
        ),
    Command::new("cluster|shards", 2, disabled)
        .flags(flags::STALE)
        .acl(acl::SLOW)
        .tips(&["nondeterministic_output"])
        .doc(
            "cluster",
            "7.0.0",
            "O(N) where N is the total number of cluster nodes",
            "Get array of cluster slots to node mappings",
        ),
    Command::new("cluster|slaves", 3, disabled)
        .flags(flags::ADMIN | flags::STALE)
        .acl(DANGEROUS)
        .tips(&["nondeterministic_output"])
        .doc(
            "cluster",
            "3.0.0",
            "O(1)",
            "List replica nodes of the specified master node",
        ),
    Command::new("cluster|slots", 2, disabled)
        .flags(flags::STALE)
        .acl(acl::SLOW)
        .tips(&["nondeterministic_output"])
        .doc(
            "cluster",
            "3.0.0",
            "O(N) where N is the total number of Cluster nodes",
            "Get array of Cluster slot to node mappings",
        ),
];

pub const COMMANDS: &[Command] = &[Command::new("cluster", -2, disabled)
    .acl(acl::SLOW)
    .doc(
        "cluster",
        "3.0.0",
        "Depends on subcommand.",
        "A container for cluster commands",
    )
    .subcommands(SUBCOMMANDS)];

/// Every subcommand, HELP included: Redis checks that cluster support is on before
/// anything else.
fn disabled(_ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    Err("ERR This instance has cluster support disabled".into())
}
