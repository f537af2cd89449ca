"""Git plumbing: the one place that runs git and reads and writes objects, trees and refs."""
