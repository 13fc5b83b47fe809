package inspect

import "net/url"

// The API group and version, as an APIService names them.
const (
	GroupName  = "inspect.fluence.flux-framework.org"
	Version    = "v1alpha1"
	APIVersion = GroupName + "/" + Version
	// PathPrefix is where the scheduler serves the API; the aggregation
	// layer forwards the API server's same path to it.
	PathPrefix = "/apis/" + GroupName + "/" + Version
)

// The API's resources, as RBAC rules name them.
const (
	ResourceGroups = "groups" // namespaced; get one group (its explanation) or list them
	ResourceQueue  = "queue"  // namespaced; list: the waiting requests in order
	ResourceNodes  = "nodes"  // cluster-wide; list
	ResourceGraph  = "graph"  // cluster-wide; list: the resource graph's shape
)

// ProfileParam is the query parameter choosing the scheduler profile when
// one process runs several fluence profiles.
const ProfileParam = "profile"

// Path returns the path of a resource: in a namespace, or across
// namespaces (and for the cluster-wide resources) when namespace is "";
// name selects one object. The profile, when given, is added as a query.
func Path(resource, namespace, name, profile string) string {
	p := PathPrefix
	if namespace != "" {
		p += "/namespaces/" + url.PathEscape(namespace)
	}
	p += "/" + resource
	if name != "" {
		p += "/" + url.PathEscape(name)
	}
	if profile != "" {
		p += "?" + url.Values{ProfileParam: {profile}}.Encode()
	}
	return p
}

// ForwardedAuthorization is the request header in which kubectl fluence
// sends its bearer token through the API server's Service proxy, which
// deletes the Authorization header once it has authenticated the caller
// and calls the scheduler with no credentials of its own. The scheduler
// reads the header on the inspection API's paths alone, and only from a
// request that has no Authorization header, and authenticates the token
// as it would that header (a TokenReview): the caller is checked by the
// API server (get on services/proxy) and again by the scheduler (its
// rights on this API), as through the APIService.
const ForwardedAuthorization = "X-Fluence-Authorization"

// ServiceProxyPath returns the API server's path that proxies path (one
// of this API's, from Path) to the Service name's port (a name or a
// number) in namespace, over HTTPS.
func ServiceProxyPath(namespace, name, port, path string) string {
	return "/api/v1/namespaces/" + url.PathEscape(namespace) + "/services/https:" + url.PathEscape(name) + ":" + url.PathEscape(port) + "/proxy" + path
}
