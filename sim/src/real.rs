pub struct LocalCluster;
