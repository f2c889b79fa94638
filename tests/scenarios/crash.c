/* A host that crashes after creating objects: rdmacheck must still leave
 * a JSON report (status "crashed") and let the crash happen. */
#include <signal.h>
#include "scn.h"

int main(int argc, char **argv)
{
	struct rdma_event_channel *ch;

	scn_bad(argc, argv);
	ch = scn_channel();
	scn_id(ch);
	raise(SIGSEGV);
	return 0;
}
