import Synchronization

/// Metric families a store module adds to the metrics file (Apple's requests by environment,
/// Google's unknown push keys): its own counters, rendered after the core's. Every registered
/// store's families are in every file, configured or not, so a dashboard's series never vanish.
package protocol StoreMetricFamilies: AnyObject, Sendable {
    init()
    /// Its families in the Prometheus text format; every series carries `app` (`bundle_id="…"`).
    func render(app: String) -> String
}

/// The store metric families the registered modules declared (`StoreModule.metricFamilies`).
package enum StoreMetricRegistry {
    private static let registered = Mutex<[any StoreMetricFamilies.Type]>([])

    package static func register(_ families: [any StoreMetricFamilies.Type]) {
        registered.withLock { list in
            for family in families where !list.contains(where: { $0 == family }) { list.append(family) }
        }
    }

    package static var all: [any StoreMetricFamilies.Type] { registered.withLock { $0 } }
}

extension Metrics {
    /// This process's counters of one store family, made at first use.
    package func family<Family: StoreMetricFamilies>(_ type: Family.Type) -> Family {
        storeFamilies.withLock { made in
            let key = ObjectIdentifier(type)
            if let family = made[key] as? Family { return family }
            let family = Family()
            made[key] = family
            return family
        }
    }

    /// Every registered store family, in registration order.
    func renderStoreFamilies(app: String) -> String {
        StoreMetricRegistry.all.map { type in renderFamily(type, app: app) }.joined()
    }

    private func renderFamily<Family: StoreMetricFamilies>(_ type: Family.Type, app: String) -> String {
        family(type).render(app: app)
    }

    /// A family's HELP and TYPE lines, which come before its series.
    package static func header(_ name: String, _ type: String, _ help: String) -> String {
        "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
    }
}
